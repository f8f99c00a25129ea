import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { optionalPackageMessages } from './optional-package.messages.js';

/**
 * Imports an optional peer dependency, only where it is used.
 * @param feature What needs it, for the error message.
 * @param load The `import()` of the package, written where it is used so bundlers see it.
 * @throws IdempotencyOptionsError naming the package to install when it is missing.
 */
export async function loadOptionalPackage<T>(packageName: string, feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw new IdempotencyOptionsError(optionalPackageMessages.packageMissing(packageName, feature), { cause: error });
  }
}

/** Imports an optional peer dependency if it is installed; undefined if it is not. */
export async function loadIfInstalled<T>(load: () => Promise<T>): Promise<T | undefined> {
  try {
    return await load();
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') {
      return undefined;
    }
    throw error;
  }
}
