/**
 * `automations/`: automation records and their schedules, the scheduler tick, webhook deliveries
 * (verification, deduplication) and the runs they start.
 */
export {
  type AutomationSettings,
  Automations,
  type IncomingDelivery,
  type RerunOutcome,
  type TickResult,
  type WebhookReceipt,
} from './automations.js';
export type { AutomationInput, AutomationTrigger, AutomationView } from './records.js';
export { nextOccurrence, type Schedule, scheduleProblem } from './schedule.js';
export {
  checkGithubWebhook,
  checkStripeWebhook,
  checkWebhook,
  signGithubWebhook,
  signStripeWebhook,
  signWebhook,
  WEBHOOK_BODY_CAP,
  WEBHOOK_SCHEMES,
  WEBHOOK_WINDOW_SECONDS,
  type WebhookDelivery,
  type WebhookRejection,
  type WebhookScheme,
  type WebhookSource,
} from './webhooks.js';
