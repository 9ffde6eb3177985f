#!/usr/bin/env node
// Part of `npm run build`: bundles the workflow code once and keeps it in dist/, so that a worker starts
// without bundling (workflows/bundle.ts).
import { workflowBundle } from '../dist/workflows/bundle.js';

await workflowBundle();
