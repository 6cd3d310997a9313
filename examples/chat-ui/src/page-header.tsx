/** The header every page of the bundle shares: its title, links to the host's other pages, who is signed in, and sign-out. */

export interface PageLink {
  href: string;
  label: string;
}

export function PageHeader({
  title,
  links,
  user,
  onSignOut,
  skipTo,
}: {
  title: string;
  links?: ReadonlyArray<PageLink> | undefined;
  user?: string | undefined;
  onSignOut?: (() => void) | undefined;
  /** The page's main control (the message box): a first link, shown when focused, jumps to it. */
  skipTo?: { id: string; label: string } | undefined;
}) {
  return (
    <header className="app-header">
      {skipTo && (
        <a className="skip-link" href={`#${skipTo.id}`}>
          {skipTo.label}
        </a>
      )}
      <h1>{title}</h1>
      {links && links.length > 0 && (
        <nav aria-label="Pages">
          {links.map((link) => (
            <a key={link.href} href={link.href}>
              {link.label}
            </a>
          ))}
        </nav>
      )}
      {user && <span className="user">Signed in as {user}</span>}
      {onSignOut && (
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      )}
    </header>
  );
}
