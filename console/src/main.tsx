import '@picocss/pico/css/pico.min.css';
import './console.css';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { lazy, StrictMode, Suspense } from 'react';
import { createRoot } from 'react-dom/client';
import { Redirect, Route, Switch } from 'wouter';
import { ApiProblem, setApiHandlers } from './api.ts';
// The sign-in pages and the dashboard load with the app; every other page is a chunk of its own, fetched
// the first time it is opened, so the first load carries only what the first screen needs.
import { Login, Register, ResetPassword } from './pages/auth.tsx';
import { Dashboard, dashboardQueries } from './pages/dashboard.tsx';
import { StepUpDialog, stepUp } from './pages/step-up.tsx';
import { meQuery } from './session.ts';
import { Shell } from './shell.tsx';

const Messages = lazy(() => import('./pages/messages.tsx'));
const Inbox = lazy(() => import('./pages/inbox.tsx'));
const Contacts = lazy(() => import('./pages/contacts.tsx'));
const ContactDetail = lazy(() => import('./pages/contact-detail.tsx'));
const ContactLists = lazy(() => import('./pages/contact-lists.tsx'));
const Campaigns = lazy(() => import('./pages/campaigns.tsx'));
const CampaignDetail = lazy(() => import('./pages/campaign-detail.tsx'));
const Numbers = lazy(() => import('./pages/numbers.tsx'));
const Extensions = lazy(() => import('./pages/extensions.tsx'));
const Calls = lazy(() => import('./pages/calls.tsx'));
const LiveCalls = lazy(() => import('./pages/live-calls.tsx'));
const QueueWallboard = lazy(() => import('./pages/queue-wallboard.tsx'));
const Voicemail = lazy(() => import('./pages/voicemail.tsx'));
const Recordings = lazy(() => import('./pages/recordings.tsx'));
const CallFlows = lazy(() => import('./pages/call-flows.tsx'));
const CallFlowEdit = lazy(() => import('./pages/call-flow-edit.tsx'));
const NewCallFlow = lazy(() =>
  import('./pages/call-flow-edit.tsx').then((page) => ({ default: page.NewCallFlow })),
);
const RingGroups = lazy(() => import('./pages/ring-groups.tsx'));
const Queues = lazy(() => import('./pages/queues.tsx'));
const QueueEdit = lazy(() => import('./pages/queue-edit.tsx'));
const NewQueue = lazy(() => import('./pages/queue-edit.tsx').then((page) => ({ default: page.NewQueue })));
const Agents = lazy(() => import('./pages/agents.tsx'));
const AgentDetail = lazy(() => import('./pages/agent-detail.tsx'));
const KnowledgeBases = lazy(() => import('./pages/knowledge-bases.tsx'));
const AgentCalls = lazy(() => import('./pages/agent-calls.tsx'));
const ApiKeys = lazy(() => import('./pages/api-keys.tsx'));
const Webhooks = lazy(() => import('./pages/webhooks.tsx'));
const WebhookDetail = lazy(() => import('./pages/webhook-detail.tsx'));
const Settings = lazy(() => import('./pages/settings.tsx'));
const Members = lazy(() => import('./pages/members.tsx'));
const Invitations = lazy(() => import('./pages/invitations.tsx'));
const Exports = lazy(() => import('./pages/exports.tsx'));

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      // A refusal will not change by asking again; a network blip might.
      retry: (count, error) => !(error instanceof ApiProblem) && count < 2,
    },
  },
});

// Who is signed in is the first thing every page asks: ask before React has rendered anything, and on the
// dashboard ask for its figures at the same time (an organization without a product answers 402: ignored).
if (!/^\/(login|register|reset-password)/.test(window.location.pathname)) {
  void queryClient.prefetchQuery(meQuery);
  if (window.location.pathname === '/') {
    const { messages, calls } = dashboardQueries();
    void queryClient.prefetchQuery(messages);
    void queryClient.prefetchQuery(calls);
  }
}

setApiHandlers({
  signedOut: () => {
    queryClient.clear();
    if (!window.location.pathname.startsWith('/login')) {
      const next = window.location.pathname + window.location.search;
      window.location.assign(`/login?next=${encodeURIComponent(next)}`);
    }
  },
  askForCode: stepUp,
});

function App() {
  return (
    <Switch>
      <Route path="/login" component={Login} />
      <Route path="/register" component={Register} />
      <Route path="/reset-password" component={ResetPassword} />
      <Route>
        <Shell>
          <Suspense fallback={<p aria-busy="true">Loading…</p>}>
            <Switch>
              <Route path="/" component={Dashboard} />
              <Route path="/inbox/:id?" component={Inbox} />
              <Route path="/messages" component={Messages} />
              <Route path="/contacts" component={Contacts} />
              <Route path="/contacts/:id" component={ContactDetail} />
              <Route path="/lists" component={ContactLists} />
              <Route path="/campaigns" component={Campaigns} />
              <Route path="/campaigns/:id" component={CampaignDetail} />
              <Route path="/numbers" component={Numbers} />
              <Route path="/extensions" component={Extensions} />
              <Route path="/calls" component={Calls} />
              <Route path="/live-calls" component={LiveCalls} />
              <Route path="/voicemail" component={Voicemail} />
              <Route path="/recordings" component={Recordings} />
              <Route path="/call-flows" component={CallFlows} />
              <Route path="/call-flows/new" component={NewCallFlow} />
              <Route path="/call-flows/:id" component={CallFlowEdit} />
              <Route path="/ring-groups" component={RingGroups} />
              <Route path="/queues" component={Queues} />
              <Route path="/queues/new" component={NewQueue} />
              <Route path="/queues/:id/wallboard" component={QueueWallboard} />
              <Route path="/queues/:id" component={QueueEdit} />
              <Route path="/agents" component={Agents} />
              <Route path="/agents/:id" component={AgentDetail} />
              <Route path="/knowledge-bases" component={KnowledgeBases} />
              <Route path="/agent-calls" component={AgentCalls} />
              <Route path="/api-keys" component={ApiKeys} />
              <Route path="/webhooks" component={Webhooks} />
              <Route path="/webhooks/:id" component={WebhookDetail} />
              <Route path="/settings" component={Settings} />
              <Route path="/members" component={Members} />
              <Route path="/invitations" component={Invitations} />
              <Route path="/exports" component={Exports} />
              <Route path="/dashboard">
                <Redirect to="/" />
              </Route>
              <Route>
                <h1>Not found</h1>
                <p>There is no page here.</p>
              </Route>
            </Switch>
          </Suspense>
        </Shell>
      </Route>
    </Switch>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
      <StepUpDialog />
    </QueryClientProvider>
  </StrictMode>,
);
