#!/usr/bin/env node
// The installed command: the compiled CLI (cli/dist, built by `npm run build -w cli`, which `npm ci` runs).
import '../dist/comms.js';
