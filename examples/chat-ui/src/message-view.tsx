/**
 * One message: its text (as plain text: React escapes it, nothing is parsed as HTML; each
 * paragraph runs in the direction of its own first letters, so Hebrew or Arabic reads right to
 * left), its
 * reasoning when the model sent any, its tool calls as cards, and the apps the agent builds.
 */
import { isAppPart } from '@service/react';
import { isToolUIPart, type UIMessage } from 'ai';
import type { ReactNode } from 'react';
import { ChatAppPart } from './chat-app-part';
import { type ApprovalActions, ToolCard } from './tool-card';

export function MessageView({
  message,
  streaming,
  actions,
  footer,
  base = '/api/service',
}: {
  message: UIMessage;
  /** Whether this message is still streaming: an app part still building past its end died. */
  streaming: boolean;
  actions: ApprovalActions;
  /** Shown under the message (the last answer's Regenerate button). */
  footer?: ReactNode;
  /** Where the host mounts the wire: a finished app is opened there for its data. */
  base?: string;
}) {
  return (
    <li className={`message message-${message.role}`}>
      <span className="message-author">{message.role === 'user' ? 'You' : 'Assistant'}</span>
      {message.parts.map((part, index) => {
        // Parts have no ids of their own; their order within a message never changes.
        const key = `${message.id}-${index}`;
        if (part.type === 'text') {
          return (
            <p key={key} className="message-text" dir="auto">
              {part.text}
            </p>
          );
        }
        if (part.type === 'reasoning' && part.text.trim() !== '') {
          return (
            <details key={key} className="reasoning">
              <summary>Reasoning</summary>
              <p dir="auto">{part.text}</p>
            </details>
          );
        }
        if (isToolUIPart(part)) return <ToolCard key={key} part={part} actions={actions} />;
        if (isAppPart(part)) return <ChatAppPart key={key} part={part} streaming={streaming} base={base} />;
        return null;
      })}
      {footer}
    </li>
  );
}
