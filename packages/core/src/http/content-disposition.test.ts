import { describe, expect, it } from 'vitest';
import { contentDisposition } from './content-disposition.js';

describe('contentDisposition', () => {
  it('gives an ASCII fallback and the exact UTF-8 name', () => {
    expect(contentDisposition('attachment', 'Résumé "final" (1).pdf')).toBe(
      `attachment; filename="R_sum_ _final_ (1).pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22%20%281%29.pdf`,
    );
  });

  it('keeps a plain name as it is', () => {
    expect(contentDisposition('inline', 'photo.png')).toBe(
      `inline; filename="photo.png"; filename*=UTF-8''photo.png`,
    );
  });
});
