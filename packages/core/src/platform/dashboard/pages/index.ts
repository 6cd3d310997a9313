import type { DashboardPage } from '../page.js';
import { billingPage } from './billing.js';
import { homePage } from './home.js';

/** Every page of the dashboard, one module each. */
export const DASHBOARD_PAGES: readonly DashboardPage[] = [homePage, billingPage];
