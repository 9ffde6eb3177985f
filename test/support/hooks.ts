/** Root hooks (registered in .mocharc.json): after every suite, close the browser, stop the shared API, then the services and the workflow test server. */
import { stopSharedApi } from './api.js';
import { closeBrowser } from './browser.js';
import { stopServices } from './services.js';
import { stopWorkflowEnvironment } from './workflow-environment.js';

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(120_000);
    await closeBrowser();
    await stopSharedApi();
    await stopServices();
    await stopWorkflowEnvironment();
  },
};
