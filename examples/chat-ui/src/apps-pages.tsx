/**
 * The host's apps pages around `@service/react`'s own: the person's apps (`<AppsPage>`, which
 * opens the app a link names) and, for reviewers, the review queue (`<ReviewQueue>`). Each has the
 * same header as the chat and orders pages: the title, links to the host's other pages, who is
 * signed in and a sign-out button.
 */
import { AppsPage, ReviewQueue, ServiceProvider } from '@service/react';
import type { ReactNode } from 'react';
import { PageHeader, type PageLink } from './page-header';

export interface HostPageProps {
  /** Where the host mounts the wire. */
  base?: string;
  /** The host's other pages, linked from the header. */
  links?: ReadonlyArray<PageLink>;
  user?: string;
  onSignOut?: () => void;
  title?: string;
}

export interface AppsHostPageProps extends HostPageProps {
  /** The app to open as the page loads (the `?app=` of a link naming it). */
  openAppId?: string;
}

export function AppsHostPage({ openAppId, ...page }: AppsHostPageProps) {
  return (
    <HostPage {...page}>
      <AppsPage {...(openAppId ? { openAppId } : {})} />
    </HostPage>
  );
}

export function ReviewHostPage(page: HostPageProps) {
  return (
    <HostPage {...page}>
      <ReviewQueue />
    </HostPage>
  );
}

function HostPage({
  base = '/api/service',
  links,
  user,
  onSignOut,
  title = 'Apps',
  children,
}: HostPageProps & { children: ReactNode }) {
  return (
    <ServiceProvider baseUrl={base}>
      <div className="host-page">
        <PageHeader title={title} links={links} user={user} onSignOut={onSignOut} />
        <main className="host-page-main">{children}</main>
      </div>
    </ServiceProvider>
  );
}
