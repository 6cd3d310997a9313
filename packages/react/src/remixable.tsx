/**
 * `<Remixable>`: marks a host component the person may remix. `service sync` finds these wrappers
 * by their `id`. For now it renders its children unchanged inside an element that carries
 * `data-service-remixable={id}` (laid out with `display: contents`, so the page's layout is
 * untouched); remixing in place comes with a later version of this package.
 */
import type { ReactNode } from 'react';

export interface RemixableProps {
  /** The component's stable key, which names its baseline: keep it when the component changes. */
  id: string;
  children?: ReactNode;
}

export function Remixable({ id, children }: RemixableProps) {
  return (
    <div className="svc-remixable" data-service-remixable={id}>
      {children}
    </div>
  );
}
