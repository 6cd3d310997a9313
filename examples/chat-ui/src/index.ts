/**
 * `@service/example-chat-ui`: the chat page over the service wire as a React component. Plain
 * React, `@ai-sdk/react` and `ai`, no Node APIs, so any host can render it (the stylesheet is
 * `@service/example-chat-ui/chat.css`). It ships as TypeScript source for bundlers (esbuild,
 * Next.js), so relative imports carry no extension.
 */
export { AppsHostPage, type AppsHostPageProps, type HostPageProps, ReviewHostPage } from './apps-pages';
export { ChatApp, type ChatAppProps } from './chat-app';
export { type Order, OrdersPage, type OrdersPageProps } from './orders-page';
export { PageHeader, type PageLink } from './page-header';
export { wireErrorMessage } from './wire';
