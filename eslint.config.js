import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', 'node_modules/**', 'coverage/**', '.data/**', 'docs/api/**', 'test/apps/data-layers/prisma-mariadb/generated/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', globalThis: 'readonly' } },
  },
  {
    // The demo, the suites and the bench use the library as its users do: by its package name.
    files: ['apps/**', 'test/**', 'bench/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/libs/idempotency', '**/libs/idempotency/**', 'nestjs-idempotent-consumer/*', '!nestjs-idempotent-consumer/testing'],
              message: "Import 'nestjs-idempotent-consumer' or 'nestjs-idempotent-consumer/testing'; a check of an internal goes in a spec beside the source.",
            },
          ],
        },
      ],
    },
  },
);
