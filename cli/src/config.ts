// Where `comms login` keeps the key: $XDG_CONFIG_HOME/comms/config.json (default ~/.config), the directory
// 0700 and the file 0600 so that no other user of the machine can read the key. The environment
// (COMMS_API_KEY, COMMS_BASE_URL) and the command line's --api-key/--base-url win over the file.
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface StoredConfig {
  apiKey?: string;
  baseUrl?: string;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'comms', 'config.json');
}

export async function readConfig(): Promise<StoredConfig> {
  try {
    return JSON.parse(await readFile(configPath(), 'utf8')) as StoredConfig;
  } catch {
    return {};
  }
}

export async function writeConfig(config: StoredConfig): Promise<string> {
  const path = configPath();
  await mkdir(join(path, '..'), { recursive: true, mode: 0o700 });
  await writeFile(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(path, 0o600); // writeFile's mode applies only when it creates the file
  return path;
}

export async function removeConfig(): Promise<void> {
  await rm(configPath(), { force: true });
}
