/** The CLI's version (kept equal to package.json's by a test): `service --version`. */
export const VERSION = '0.1.0';
