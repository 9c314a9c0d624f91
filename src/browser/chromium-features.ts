/**
 * The one `--disable-features` switch the worker passes to Chromium.
 *
 * Chromium reads only the last `--disable-features` on its command line, and Playwright already
 * passes one of its own: a second switch replaces Playwright's list instead of adding to it. So
 * ours repeats every feature Playwright disables (its behaviour must not change under us) and
 * adds the worker's. test/integration/chromium-features.test.ts fails when a Playwright upgrade
 * disables a feature this list lacks.
 */

/** What playwright-core 1.65 disables (chromiumSwitches), kept as it is. */
const PLAYWRIGHT_DISABLED = [
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'TcpPortRandomizationWin',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'msForceBrowserSignIn',
  'msEdgeUpdateLaunchServicesPreferredVersion',
] as const;

/** The worker's own, each with its reason. */
const WORKER_DISABLED: Record<string, string> = {
  // Every context Playwright creates is a browser window, and each window builds the address
  // bar's suggestion popups as WebUI pages in a renderer process of their own, which nothing
  // ever shows headless: a third of an execution's CPU before this list (bench -- phases).
  WebUIOmniboxPopup: 'the omnibox popup, a renderer per execution',
  WebUIOmniboxAimPopup: 'its AI-mode twin, built beside it',
  // On every page with a form Chromium asks Google's autofill server what the fields are:
  // requests the egress proxy refuses, each a `blocked` event of no interest in the run's log.
  AutofillServerCommunication: 'form-field queries to content-autofill.googleapis.com',
};

/** `--disable-features=…` with Playwright's features and the worker's. */
export function disableFeaturesSwitch(): string {
  return `--disable-features=${[...PLAYWRIGHT_DISABLED, ...Object.keys(WORKER_DISABLED)].join(',')}`;
}

/** The features the worker adds to Playwright's, for tests. */
export const workerDisabledFeatures = (): string[] => Object.keys(WORKER_DISABLED);
