export {
  appendEvents,
  EVENT_LOG_LENGTH,
  EVENTS_CHANNEL,
  type EventDraft,
  latestEventSeq,
  readEvents,
  type StoredEvent,
  sseNamesOf,
} from './log.js';
export { EventStreamHub, type EventStreamHubOptions, type OpenStreamResult } from './streams.js';
