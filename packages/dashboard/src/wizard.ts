/**
 * The deploy wizard one step at a time. Without script every step shows, in order, on one page;
 * with it, a `[data-wizard]` shows its current step only, with Back and Next buttons, checks a
 * step's fields before moving on, and offers the form's submit button on the last step. Moving
 * focuses the new step's legend, so a screen reader announces where the person is.
 */
export function enhanceWizards(root: Document): void {
  for (const wizard of root.querySelectorAll<HTMLElement>('[data-wizard]')) {
    const steps = [...wizard.querySelectorAll<HTMLFieldSetElement>('fieldset.wizard-step')];
    const form = wizard.closest('form');
    const submit = form?.querySelector<HTMLButtonElement>(':scope > button[type="submit"]');
    if (steps.length < 2 || !submit) continue;
    const nav = root.createElement('div');
    nav.className = 'wizard-nav';
    const back = button(root, 'Back', 'secondary');
    const next = button(root, 'Next', '');
    nav.append(back, next);
    wizard.after(nav);
    let current = 0;
    const show = (index: number, focus: boolean) => {
      current = index;
      steps.forEach((step, i) => {
        step.hidden = i !== index;
      });
      back.hidden = index === 0;
      next.hidden = index === steps.length - 1;
      submit.hidden = index !== steps.length - 1;
      wizard.dataset.current = String(index + 1);
      if (focus) steps[index]?.querySelector<HTMLElement>('legend')?.focus();
    };
    back.addEventListener('click', () => show(current - 1, true));
    next.addEventListener('click', () => {
      const fields = steps[current]?.querySelectorAll<HTMLInputElement>('input, select, textarea') ?? [];
      for (const field of fields) if (!field.reportValidity()) return;
      show(current + 1, true);
    });
    show(0, false);
  }
}

function button(root: Document, text: string, className: string): HTMLButtonElement {
  const element = root.createElement('button');
  element.type = 'button';
  element.textContent = text;
  if (className) element.className = className;
  return element;
}
