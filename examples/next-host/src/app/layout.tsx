import type { ReactNode } from 'react';

export const metadata = { title: 'Next.js host' };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body
        style={{ fontFamily: 'system-ui, sans-serif', maxWidth: 720, margin: '2rem auto', padding: '0 1rem' }}
      >
        {children}
      </body>
    </html>
  );
}
