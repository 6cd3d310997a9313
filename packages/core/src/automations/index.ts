/**
 * `automations/`: the scheduler tick and webhook deliveries (verification, deduplication).
 */
export { type AutomationSettings, Automations, type WebhookReceipt } from './automations.js';
export {
  checkWebhook,
  signWebhook,
  WEBHOOK_BODY_CAP,
  WEBHOOK_WINDOW_SECONDS,
  type WebhookDelivery,
  type WebhookRejection,
} from './webhooks.js';
