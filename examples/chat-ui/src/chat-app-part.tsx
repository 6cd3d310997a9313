/**
 * The app the agent builds, as the chat shows it: `<AppPart>` while it builds or when it failed;
 * once final, the app with its data. The part carries the document, not the data, so the page
 * opens the app over the wire (`POST /apps/:id/open`, its queries run once as the person) and
 * draws the part's version with those results. Until they arrive, or if opening fails, the part
 * shows as `<AppPart>` does.
 */
import { AppPart, AppView, appPartView, type ChatPartLike } from '@service/react';
import { useEffect, useState } from 'react';
import { openAppQueries } from './wire';

export function ChatAppPart({
  part,
  streaming,
  base,
}: {
  part: ChatPartLike;
  streaming: boolean;
  base: string;
}) {
  const view = appPartView(part, streaming);
  const ready = view.state === 'ready' ? `${view.appId}@${view.version}` : null;
  const [queries, setQueries] = useState<{ of: string; results: Record<string, unknown> } | null>(null);

  useEffect(() => {
    if (!ready) return;
    const appId = ready.slice(0, ready.lastIndexOf('@'));
    let current = true;
    openAppQueries(base, appId).then(
      (results) => current && setQueries({ of: ready, results }),
      // The part still shows the app as built, without its data.
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [base, ready]);

  if (view.state === 'ready' && queries && queries.of === ready) {
    return (
      <div
        className="svc-app-part"
        data-service-app={view.appId}
        data-app-version={view.version ?? undefined}
      >
        <AppView key={ready} document={view.document} queries={queries.results} />
      </div>
    );
  }
  return <AppPart part={part} messageStreaming={streaming} />;
}
