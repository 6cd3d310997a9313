/**
 * `@service/example-chat-ui`: the chat page over the service wire as a React component. Plain
 * React, `@ai-sdk/react` and `ai`, no Node APIs, so any host can render it (the stylesheet is
 * `@service/example-chat-ui/chat.css`).
 */
export { ChatApp, type ChatAppProps } from './chat-app.js';
export { wireErrorMessage } from './wire.js';
