/**
 * The AI SDK's own chat core as `useChat` runs it: `AbstractChat` (which every framework binding
 * wraps) with the smallest in-memory state, as the bindings keep theirs. No line of the client
 * is ours; give it a `DefaultChatTransport` pointed at a real server.
 */
import { AbstractChat, type ChatInit, type ChatState, type ChatStatus, type UIMessage } from 'ai';

export class TestChat extends AbstractChat<UIMessage> {
  constructor(init: Omit<ChatInit<UIMessage>, 'messages'>) {
    let status: ChatStatus = 'ready';
    let error: Error | undefined;
    let messages: UIMessage[] = [];
    const state: ChatState<UIMessage> = {
      get status() {
        return status;
      },
      set status(value) {
        status = value;
      },
      get error() {
        return error;
      },
      set error(value) {
        error = value;
      },
      get messages() {
        return messages;
      },
      set messages(value) {
        messages = value;
      },
      pushMessage: (message) => {
        messages = [...messages, message];
      },
      popMessage: () => {
        messages = messages.slice(0, -1);
      },
      replaceMessage: (index, message) => {
        messages = [...messages.slice(0, index), message, ...messages.slice(index + 1)];
      },
      snapshot: (thing) => structuredClone(thing),
    };
    super({ ...init, state });
  }
}
