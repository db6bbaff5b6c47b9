// Templates that fill the flow editor with a common shape; the person then picks their own extensions and ring
// groups (left empty here, so the editor asks for them). A wrong key repeats the menu by starting this flow
// again (a redirect to itself), as the worked example of docs/voice.md does.
import { newKey, SELF_FLOW, type Step } from './model.ts';

const say = (text: string): Step => ({ type: 'say', $key: newKey(), text });
const again = (): Step[] => [
  say('Sorry, I did not get that.'),
  { type: 'redirect', $key: newKey(), flowId: SELF_FLOW },
];
const dial = (type: 'extension' | 'ring_group'): Step => ({
  type: 'dial',
  $key: newKey(),
  targets: [{ type, target: '' }],
});
const branch = (answer: string, steps: Step[]) => ({ $key: newKey(), answer, steps });

export interface Template {
  id: string;
  name: string;
  description: string;
  steps: () => Step[];
}

export const TEMPLATES: Template[] = [
  {
    id: 'after-hours',
    name: 'After-hours menu',
    description:
      'Open: a menu, 1 and 2 ring an extension each. Closed and on holidays: a message, then voicemail.',
    steps: () => [
      {
        type: 'hours',
        $key: newKey(),
        timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        open: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '17:00' }],
        holidays: [],
        whenOpen: [
          {
            type: 'gather',
            $key: newKey(),
            input: ['dtmf'],
            numDigits: 1,
            timeoutSeconds: 5,
            prompt: say('For appointments press 1. For billing press 2.'),
            branches: [branch('1', [dial('extension')]), branch('2', [dial('extension')])],
            otherwise: again(),
          },
        ],
        whenClosed: [
          say('We are closed. Please leave a message after the tone.'),
          { type: 'voicemail', $key: newKey(), extensionId: '' },
        ],
      },
    ],
  },
  {
    id: 'sales-support',
    name: 'Sales/support menu',
    description: '1 rings the sales ring group, 2 the support ring group; anything else repeats the menu.',
    steps: () => [
      {
        type: 'gather',
        $key: newKey(),
        input: ['dtmf'],
        numDigits: 1,
        timeoutSeconds: 5,
        prompt: say('For sales press 1. For support press 2.'),
        branches: [branch('1', [dial('ring_group')]), branch('2', [dial('ring_group')])],
        otherwise: again(),
      },
    ],
  },
];
