import type { DashboardPage } from '../page.js';
import { billingPage } from './billing.js';
import { deploymentPage, deploymentsPage } from './deployments.js';
import { homePage } from './home.js';
import { integrationPage, integrationsPage } from './integrations.js';
import { keysPage } from './keys.js';
import { membersPage } from './members.js';
import { pricingPage } from './pricing.js';
import { settingsPage } from './settings.js';
import { deployPage, toolPage, toolsPage } from './tools.js';

/** Every page of the dashboard, one module each. */
export const DASHBOARD_PAGES: readonly DashboardPage[] = [
  homePage,
  billingPage,
  integrationsPage,
  integrationPage,
  toolsPage,
  toolPage,
  deployPage,
  deploymentsPage,
  deploymentPage,
  keysPage,
  membersPage,
  settingsPage,
  pricingPage,
];
