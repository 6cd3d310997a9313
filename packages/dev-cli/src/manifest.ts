/**
 * The deploy manifest (`service.yaml`) lives in core's shared schemas, so `service validate` and the
 * platform's release publishing check it with one validator.
 *
 * @see docs/cli.md "The manifest"
 */
export {
  checkManifest,
  formatPath,
  MANIFEST_NAME_PATTERN,
  type Manifest,
  type ManifestProblem,
  type ManifestResult,
  manifestSchema,
  RUNTIMES,
} from '@service/core/schemas';
