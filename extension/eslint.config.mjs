// ESLint for the side panel's TypeScript: `npm run lint` (tests/panel/test_build.py runs it when node_modules exists).
//
// The rule set, in full:
// - ESLint's `recommended`;
// - typescript-eslint's `recommended` (syntax-only rules: linting needs no type information and stays fast;
//   `npm run typecheck` is the type check);
// - eslint-plugin-react-hooks' `recommended` (rules of hooks, exhaustive effect dependencies) for the React widgets;
// - with one rule off: `@typescript-eslint/no-explicit-any`. `any` marks the panel's untyped boundaries — JSON-RPC
//   params as they come off the socket (the transport hands them to typed handlers in client.ts), JupyterLab objects
//   without public types (the shell, cell outputs, notebook metadata) and the test fakes — and each one is a
//   deliberate cast there; everything else is strictly typed (tsconfig `strict`, `noImplicitAny`).
// Lint warnings count as failures too: the npm script runs with `--max-warnings 0`.
import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["lib/", "build-test/", "node_modules/", "scripts/"] },
  {
    files: ["src/**/*.{ts,tsx}", "test/**/*.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.recommended, reactHooks.configs["recommended-latest"]],
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: "module",
    },
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
    },
  },
);
