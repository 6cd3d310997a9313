/**
 * The dashboard's one script. Pages are server-rendered and work without it; it adds what HTML
 * cannot: charts drawn from the figures a page carries, figures that change live (the balance,
 * connection status) and a confirmation before destructive forms. It runs under a strict CSP
 * (its own origin only, no inline script), so it reads page data from attributes, never eval.
 */
import './dashboard.css';
import { drawCharts } from './charts.js';
import { followLive } from './live.js';
import { enhanceWizards } from './wizard.js';

function confirmDestructiveForms(): void {
  document.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    const question = form.dataset.confirm;
    if (question && !window.confirm(question)) event.preventDefault();
  });
}

function start(): void {
  confirmDestructiveForms();
  drawCharts(document);
  followLive(document);
  enhanceWizards(document);
  document.documentElement.dataset.ready = 'true';
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start, { once: true });
else start();
