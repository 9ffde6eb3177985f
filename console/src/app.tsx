/** The console's frame: sign-in until there is a session, then the navigation and one view per route. */
import { useEffect, useState } from 'preact/hooks';
import { Link, Route, Router, Switch, useLocation } from 'wouter-preact';
import { lazyView } from './lazy';
import { resumeSession, SignIn, signOut } from './sign-in';
import { useSession } from './session';
import { applyTheme, initialTheme, type Theme } from './theme';

const views = {
  overview: lazyView(() => import('./views/overview'), 'the overview'),
  agents: lazyView(() => import('./views/agents'), 'agents'),
  agent: lazyView(() => import('./views/agent'), 'the agent'),
  runs: lazyView(() => import('./views/runs'), 'runs'),
  run: lazyView(() => import('./views/run'), 'the run'),
  approvals: lazyView(() => import('./views/approvals'), 'approvals'),
  threads: lazyView(() => import('./views/threads'), 'threads'),
  schedules: lazyView(() => import('./views/schedules'), 'schedules'),
  thread: lazyView(() => import('./views/thread'), 'the thread'),
  memories: lazyView(() => import('./views/memories'), 'memories'),
  datasets: lazyView(() => import('./views/datasets'), 'datasets'),
  dataset: lazyView(() => import('./views/dataset'), 'the dataset'),
  networks: lazyView(() => import('./views/networks'), 'networks'),
  network: lazyView(() => import('./views/network'), 'the network'),
  files: lazyView(() => import('./views/files'), 'files'),
  file: lazyView(() => import('./views/file'), 'the file'),
  graph: lazyView(() => import('./views/graph'), 'the graph'),
  costs: lazyView(() => import('./views/costs'), 'costs'),
  quality: lazyView(() => import('./views/quality'), 'quality'),
  experiments: lazyView(() => import('./views/experiments'), 'experiments'),
  experiment: lazyView(() => import('./views/experiment'), 'the experiment'),
  experimentComparison: lazyView(() => import('./views/experiment-comparison'), 'the comparison'),
  webhooks: lazyView(() => import('./views/webhooks'), 'webhooks'),
  webhook: lazyView(() => import('./views/webhook'), 'the webhook'),
  apiKeys: lazyView(() => import('./views/api-keys'), 'API keys'),
  auditLog: lazyView(() => import('./views/audit-log'), 'the audit log'),
};

const NAVIGATION: [string, string][] = [
  ['/', 'Overview'],
  ['/agents', 'Agents'],
  ['/runs', 'Runs'],
  ['/approvals', 'Approvals'],
  ['/threads', 'Threads'],
  ['/schedules', 'Schedules'],
  ['/memories', 'Memories'],
  ['/datasets', 'Datasets'],
  ['/experiments', 'Experiments'],
  ['/networks', 'Networks'],
  ['/files', 'Files'],
  ['/graph', 'Graph'],
  ['/costs', 'Costs'],
  ['/quality', 'Quality'],
  ['/webhooks', 'Webhooks'],
  ['/api-keys', 'API keys'],
  ['/audit-log', 'Audit log'],
];

/** The console's own path, as the API's <base> gives it: `/console` or `/<prefix>/console`. */
export const consoleBase = new URL(document.baseURI).pathname.replace(/\/$/, '');

export function App() {
  const state = useSession();
  const [theme, setTheme] = useState<Theme>(initialTheme);
  useEffect(() => void resumeSession(), []);
  useEffect(() => applyTheme(theme), [theme]);

  if (state.status === 'unknown') return <main id="main" class="sign-in" aria-busy="true" />;
  if (state.status === 'signed-out') return <SignIn reason={state.reason} />;
  const { session } = state;
  const toggle = () => {
    const next = theme === 'dark' ? 'light' : 'dark';
    applyTheme(next, true);
    setTheme(next);
  };

  return (
    <Router base={consoleBase}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Agentplane</span>
        <span class="muted" title="The project this session reads and changes">
          {session.project_id} · {session.api_key_name}
        </span>
        <span class="spacer" />
        <button type="button" class="plain" onClick={toggle} aria-pressed={theme === 'dark'}>
          Dark mode
        </button>
        <button type="button" class="plain" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <div class="frame">
        <Navigation />
        <main id="main" tabindex={-1}>
          <Switch>
            <Route path="/" component={views.overview} />
            <Route path="/agents" component={views.agents} />
            <Route path="/agents/:id" component={views.agent} />
            <Route path="/runs" component={views.runs} />
            <Route path="/runs/:id" component={views.run} />
            <Route path="/runs/:id/steps/:step" component={views.run} />
            <Route path="/approvals" component={views.approvals} />
            <Route path="/threads" component={views.threads} />
            <Route path="/schedules" component={views.schedules} />
            <Route path="/threads/:id" component={views.thread} />
            <Route path="/memories" component={views.memories} />
            <Route path="/datasets" component={views.datasets} />
            <Route path="/datasets/:id" component={views.dataset} />
            <Route path="/networks" component={views.networks} />
            <Route path="/networks/:id" component={views.network} />
            <Route path="/files" component={views.files} />
            <Route path="/files/:id" component={views.file} />
            <Route path="/graph" component={views.graph} />
            <Route path="/graph/nodes/:id" component={views.graph} />
            <Route path="/costs" component={views.costs} />
            <Route path="/quality" component={views.quality} />
            <Route path="/experiments" component={views.experiments} />
            <Route path="/experiments/:id" component={views.experiment} />
            <Route path="/experiments/:id/comparison" component={views.experimentComparison} />
            <Route path="/webhooks" component={views.webhooks} />
            <Route path="/webhooks/:id" component={views.webhook} />
            <Route path="/api-keys" component={views.apiKeys} />
            <Route path="/audit-log" component={views.auditLog} />
            <Route>
              <h1>Not found</h1>
              <p>
                The console has no page here. <Link href="/">Go to the overview.</Link>
              </p>
            </Route>
          </Switch>
        </main>
      </div>
    </Router>
  );
}

function Navigation() {
  const [location] = useLocation();
  return (
    <nav aria-label="Console">
      <ul>
        {NAVIGATION.map(([href, label]) => {
          const current = href === '/' ? location === '/' : location === href || location.startsWith(`${href}/`);
          return (
            <li key={href}>
              <Link href={href} aria-current={current ? 'page' : undefined}>
                {label}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
