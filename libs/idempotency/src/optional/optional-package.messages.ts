/** The message texts of optional peer packages. */
export const optionalPackageMessages = {
  packageMissing: (packageName: string, feature: string) =>
    `The "${packageName}" package is missing: install it to use ${feature} (npm install ${packageName}).`,
};
