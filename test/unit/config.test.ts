import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { ConfigError, readConfig, requireServices, shutdownGraceSecondsOf } from '../../cli/config.js';

function configError(run: () => unknown, ...mentions: string[]): ConfigError {
  let caught: unknown;
  assert.throws(run, (err: unknown) => {
    caught = err;
    return err instanceof ConfigError;
  });
  const error = caught as ConfigError;
  for (const text of mentions) assert.ok(error.message.includes(text), `'${error.message}' does not mention ${text}`);
  return error;
}

const S3 = { S3_ENDPOINT: 'http://127.0.0.1:9000', S3_BUCKET: 'agentplane', S3_ACCESS_KEY: 'access', S3_SECRET_KEY: 'secret' };
const ADMIN_KEY = `ap_${'a1B2_-'.repeat(4)}`;
const CONTROLLER_KEY = `ap_${'c3D4_-'.repeat(4)}`;

describe('configuration from the environment', () => {
  it('has a default for everything optional', () => {
    assert.deepEqual(readConfig({}), {
      port: 8080,
      host: undefined,
      probePort: undefined,
      metricsPort: undefined,
      dataDir: resolve('./.agentplane'),
      adminKey: undefined,
      controllerKey: undefined,
      workerPools: [],
      databaseUrl: undefined,
      temporalAddress: undefined,
      temporalNamespace: 'default',
      s3: undefined,
      blobDir: undefined,
      logLevel: 'info',
      migrate: true,
      toolsAllowPrivate: false,
      webhooks: { allowPrivate: false, retryInitialMs: 30_000, maxAttempts: 12, disableAfter: 5 },
      retention: {
        runEventsDays: 30,
        webhookDeliveriesDays: 30,
        stepPayloadsDays: 90,
        usageRecordsDays: 90,
        extractionLeftoversDays: 7,
        auditLogsDays: null,
      },
      taskQueue: 'agentplane',
      extractionConcurrency: undefined,
      fairShare: { busyUtilization: 0.3, maxWaitMs: 2000, hostCallsPerProject: 25, extractionSliceSeconds: 30 },
      rateLimits: {
        requestsPerMinute: undefined,
        concurrentRuns: undefined,
        projectRequestsPerMinute: undefined,
        projectConcurrentRuns: undefined,
      },
      basePath: '',
      sessionTtlSeconds: 28_800,
      shutdownGraceSeconds: 25,
      idempotencyKeyHours: 24,
      fileStorageGiBPerProject: 100,
      experimentsPerProject: 10,
      eventStreamLimits: { perKey: 20, perProcess: 1000, stallSeconds: 30 },
      admission: { atOnce: 8, queuedPerProject: 200, queueWaitSeconds: 30, busyUtilization: 0.2, shareWaitMs: 1000 },
      modelEnv: {},
    });
  });

  it('reads every variable it knows', () => {
    const config = readConfig({
      PORT: '9090',
      HOST: '127.0.0.1',
      AGENTPLANE_DATA_DIR: 'data/here',
      AGENTPLANE_ADMIN_KEY: ADMIN_KEY,
      AGENTPLANE_CONTROLLER_KEY: CONTROLLER_KEY,
      AGENTPLANE_WORKER_POOLS: 'gpu=proj_a1, batch.eu=proj_b2',
      DATABASE_URL: 'postgres://db/agentplane',
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'agents',
      AGENTPLANE_BLOB_DIR: '/var/blobs',
      LOG_LEVEL: 'debug',
      AGENTPLANE_MIGRATE: 'false',
      AGENTPLANE_TOOLS_ALLOW_PRIVATE: 'true',
      AGENTPLANE_TASK_QUEUE: 'network.support.desk',
      AGENTPLANE_PROBE_PORT: '8081',
      AGENTPLANE_METRICS_PORT: '9090',
      AGENTPLANE_EXTRACTION_CONCURRENCY: '3',
      AGENTPLANE_WORKER_FAIR_SHARE_BUSY_PERCENT: '50',
      AGENTPLANE_WORKER_FAIR_SHARE_MAX_WAIT_MS: '500',
      AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT: '40',
      AGENTPLANE_EXTRACTION_SLICE_SECONDS: '120',
      AGENTPLANE_RATE_LIMIT_REQUESTS_PER_MINUTE: '600',
      AGENTPLANE_RATE_LIMIT_CONCURRENT_RUNS: '4',
      AGENTPLANE_RATE_LIMIT_PROJECT_REQUESTS_PER_MINUTE: '3000',
      AGENTPLANE_RATE_LIMIT_PROJECT_CONCURRENT_RUNS: '20',
      AGENTPLANE_WEBHOOK_ALLOW_PRIVATE: 'true',
      AGENTPLANE_WEBHOOK_RETRY_INITIAL_MS: '200',
      AGENTPLANE_WEBHOOK_MAX_ATTEMPTS: '4',
      AGENTPLANE_WEBHOOK_DISABLE_AFTER: '2',
      AGENTPLANE_RETENTION_RUN_EVENTS_DAYS: '14',
      AGENTPLANE_RETENTION_WEBHOOK_DELIVERIES_DAYS: '90',
      AGENTPLANE_RETENTION_STEP_PAYLOADS_DAYS: '180',
      AGENTPLANE_RETENTION_USAGE_RECORDS_DAYS: '400',
      AGENTPLANE_RETENTION_EXTRACTION_LEFTOVERS_DAYS: '2',
      AGENTPLANE_RETENTION_AUDIT_LOGS_DAYS: '2555',
      AGENTPLANE_BASE_PATH: '/agentplane',
      AGENTPLANE_SESSION_TTL_SECONDS: '3600',
      AGENTPLANE_SHUTDOWN_GRACE_SECONDS: '55',
      AGENTPLANE_IDEMPOTENCY_KEY_HOURS: '72',
      AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT: '500',
      AGENTPLANE_EXPERIMENTS_PER_PROJECT: '25',
      AGENTPLANE_EVENT_STREAMS_PER_KEY: '5',
      AGENTPLANE_EVENT_STREAMS_PER_PROCESS: '50',
      AGENTPLANE_EVENT_STREAM_STALL_SECONDS: '10',
      AGENTPLANE_API_REQUESTS_AT_ONCE: '3',
      AGENTPLANE_API_REQUESTS_QUEUED_PER_PROJECT: '0',
      AGENTPLANE_API_QUEUE_WAIT_SECONDS: '5',
      AGENTPLANE_API_FAIR_SHARE_BUSY_PERCENT: '50',
      AGENTPLANE_API_FAIR_SHARE_MAX_WAIT_MS: '250',
      ...S3,
      S3_REGION: 'eu-west-1',
    });
    assert.deepEqual(config, {
      port: 9090,
      host: '127.0.0.1',
      probePort: 8081,
      metricsPort: 9090,
      dataDir: resolve('data/here'),
      adminKey: ADMIN_KEY,
      controllerKey: CONTROLLER_KEY,
      workerPools: [
        { queue: 'gpu', projectId: 'proj_a1' },
        { queue: 'batch.eu', projectId: 'proj_b2' },
      ],
      databaseUrl: 'postgres://db/agentplane',
      temporalAddress: 'temporal:7233',
      temporalNamespace: 'agents',
      s3: { endpoint: S3.S3_ENDPOINT, bucket: 'agentplane', accessKey: 'access', secretKey: 'secret', region: 'eu-west-1' },
      blobDir: '/var/blobs',
      logLevel: 'debug',
      migrate: false,
      toolsAllowPrivate: true,
      webhooks: { allowPrivate: true, retryInitialMs: 200, maxAttempts: 4, disableAfter: 2 },
      retention: {
        runEventsDays: 14,
        webhookDeliveriesDays: 90,
        stepPayloadsDays: 180,
        usageRecordsDays: 400,
        extractionLeftoversDays: 2,
        auditLogsDays: 2555,
      },
      taskQueue: 'network.support.desk',
      extractionConcurrency: 3,
      fairShare: { busyUtilization: 0.5, maxWaitMs: 500, hostCallsPerProject: 40, extractionSliceSeconds: 120 },
      rateLimits: { requestsPerMinute: 600, concurrentRuns: 4, projectRequestsPerMinute: 3000, projectConcurrentRuns: 20 },
      basePath: '/agentplane',
      sessionTtlSeconds: 3600,
      shutdownGraceSeconds: 55,
      idempotencyKeyHours: 72,
      fileStorageGiBPerProject: 500,
      experimentsPerProject: 25,
      eventStreamLimits: { perKey: 5, perProcess: 50, stallSeconds: 10 },
      admission: { atOnce: 3, queuedPerProject: 0, queueWaitSeconds: 5, busyUtilization: 0.5, shareWaitMs: 250 },
      modelEnv: config.modelEnv,
    });
    assert.equal(config.modelEnv.TEMPORAL_NAMESPACE, 'agents', 'model providers read the same environment');
  });

  describe('PORT', () => {
    for (const [text, port] of [
      ['0', 0],
      ['1', 1],
      ['8080', 8080],
      ['65535', 65535],
    ] as const) {
      it(`accepts ${text}`, () => {
        assert.equal(readConfig({ PORT: text }).port, port);
      });
    }

    it('takes an empty value as unset', () => {
      assert.equal(readConfig({ PORT: '' }).port, 8080);
    });

    for (const text of ['http', '-1', '65536', '80.5', '0x50', '1e3', ' ', ' 80', '80 ']) {
      it(`rejects '${text}', naming the variable and the value`, () => {
        configError(() => readConfig({ PORT: text }), 'PORT', `'${text}'`);
      });
    }
  });

  describe('AGENTPLANE_MIGRATE', () => {
    it('is true when unset or empty, and takes true or false', () => {
      assert.equal(readConfig({ AGENTPLANE_MIGRATE: '' }).migrate, true);
      assert.equal(readConfig({ AGENTPLANE_MIGRATE: 'true' }).migrate, true);
      assert.equal(readConfig({ AGENTPLANE_MIGRATE: 'false' }).migrate, false);
    });

    for (const text of ['no', '0', 'False', ' false']) {
      it(`rejects '${text}', naming the variable and the value`, () => {
        configError(() => readConfig({ AGENTPLANE_MIGRATE: text }), 'AGENTPLANE_MIGRATE', `'${text}'`);
      });
    }
  });

  describe('AGENTPLANE_DNS_SERVERS', () => {
    it('takes IP addresses with optional ports, and refuses anything else, naming the variable and the value', () => {
      readConfig({ AGENTPLANE_DNS_SERVERS: '10.0.0.10,[2001:db8::53]:5353' });
      configError(() => readConfig({ AGENTPLANE_DNS_SERVERS: 'dns.example.com' }), 'AGENTPLANE_DNS_SERVERS', `'dns.example.com'`);
    });
  });

  describe('AGENTPLANE_OUTBOUND_NETWORKS', () => {
    it('takes CIDR blocks, and refuses anything else, naming the variable and the value', () => {
      readConfig({ AGENTPLANE_OUTBOUND_NETWORKS: '127.0.0.0/8, ::1/128,203.0.113.0/24' });
      configError(() => readConfig({ AGENTPLANE_OUTBOUND_NETWORKS: '10.0.0.1' }), 'AGENTPLANE_OUTBOUND_NETWORKS', `'10.0.0.1'`);
    });
  });

  describe('AGENTPLANE_TASK_QUEUE', () => {
    it('refuses a name that is not a task queue name, naming the variable and the value', () => {
      configError(() => readConfig({ AGENTPLANE_TASK_QUEUE: 'Not A Queue' }), 'AGENTPLANE_TASK_QUEUE', `'Not A Queue'`);
    });
  });

  describe('AGENTPLANE_CONTROLLER_KEY', () => {
    it('refuses a key that does not look like one, or that is the admin key, naming the variable', () => {
      configError(() => readConfig({ AGENTPLANE_CONTROLLER_KEY: 'secret' }), 'AGENTPLANE_CONTROLLER_KEY', 'ap_');
      configError(
        () => readConfig({ AGENTPLANE_CONTROLLER_KEY: ADMIN_KEY, AGENTPLANE_ADMIN_KEY: ADMIN_KEY }),
        'AGENTPLANE_CONTROLLER_KEY must differ from AGENTPLANE_ADMIN_KEY',
      );
    });
  });

  describe('AGENTPLANE_WORKER_POOLS', () => {
    const wrong: [string, string][] = [
      ['gpu', 'task-queue=project-id'],
      ['gpu=team-a', 'task-queue=project-id'],
      ['Not A Queue=proj_a', 'task-queue=project-id'],
      ['network.team-a.desk=proj_a', "starts with network., which the Kubernetes controller's pools use"],
      ['gpu=proj_a,gpu=proj_b', "names 'gpu' twice"],
    ];
    for (const [text, message] of wrong) {
      it(`rejects '${text}', naming the variable and saying why`, () => {
        configError(() => readConfig({ AGENTPLANE_WORKER_POOLS: text }), 'AGENTPLANE_WORKER_POOLS', message);
      });
    }
  });

  describe('AGENTPLANE_EXTRACTION_CONCURRENCY', () => {
    it('is unset (one per core) by default and takes 1 to 64', () => {
      assert.equal(readConfig({}).extractionConcurrency, undefined);
      assert.equal(readConfig({ AGENTPLANE_EXTRACTION_CONCURRENCY: '' }).extractionConcurrency, undefined);
      assert.equal(readConfig({ AGENTPLANE_EXTRACTION_CONCURRENCY: '3' }).extractionConcurrency, 3);
    });

    for (const text of ['0', '65', '1.5', 'two']) {
      it(`rejects '${text}', naming the variable and the value`, () => {
        configError(() => readConfig({ AGENTPLANE_EXTRACTION_CONCURRENCY: text }), 'AGENTPLANE_EXTRACTION_CONCURRENCY', `'${text}'`);
      });
    }
  });

  describe('AGENTPLANE_WORKER_FAIR_SHARE_BUSY_PERCENT, AGENTPLANE_WORKER_FAIR_SHARE_MAX_WAIT_MS, AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT and AGENTPLANE_EXTRACTION_SLICE_SECONDS', () => {
    it("give one project's calls to its hosts 25 of a worker's 100 activity slots by default, and take 1 to 100", () => {
      assert.equal(readConfig({ AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT: '100' }).fairShare.hostCallsPerProject, 100);
      assert.equal(readConfig({ AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT: '1' }).fairShare.hostCallsPerProject, 1);
    });

    it("give a slice of a file's extraction 30 s by default, and take 1 to 3,600 s", () => {
      assert.equal(readConfig({ AGENTPLANE_EXTRACTION_SLICE_SECONDS: '1' }).fairShare.extractionSliceSeconds, 1);
      assert.equal(readConfig({ AGENTPLANE_EXTRACTION_SLICE_SECONDS: '3600' }).fairShare.extractionSliceSeconds, 3600);
    });

    it('turn projects from 30% busy, for at most 2 s, by default, and take 0 to 100% and 0 to 60,000 ms', () => {
      assert.deepEqual(readConfig({}).fairShare, {
        busyUtilization: 0.3,
        maxWaitMs: 2000,
        hostCallsPerProject: 25,
        extractionSliceSeconds: 30,
      });
      assert.deepEqual(
        readConfig({ AGENTPLANE_WORKER_FAIR_SHARE_BUSY_PERCENT: '100', AGENTPLANE_WORKER_FAIR_SHARE_MAX_WAIT_MS: '0' }).fairShare,
        { busyUtilization: 1, maxWaitMs: 0, hostCallsPerProject: 25, extractionSliceSeconds: 30 },
      );
    });

    const refused: [string, string][] = [
      ['AGENTPLANE_WORKER_FAIR_SHARE_BUSY_PERCENT', '101'],
      ['AGENTPLANE_WORKER_FAIR_SHARE_BUSY_PERCENT', '0.5'],
      ['AGENTPLANE_WORKER_FAIR_SHARE_MAX_WAIT_MS', '60001'],
      ['AGENTPLANE_WORKER_FAIR_SHARE_MAX_WAIT_MS', 'soon'],
      ['AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT', '0'],
      ['AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT', '101'],
      ['AGENTPLANE_EXTRACTION_SLICE_SECONDS', '0'],
      ['AGENTPLANE_EXTRACTION_SLICE_SECONDS', '3601'],
    ];
    for (const [name, text] of refused) {
      it(`rejects ${name}='${text}', naming the variable and the value`, () => {
        configError(() => readConfig({ [name]: text }), name, `'${text}'`);
      });
    }
  });

  describe('AGENTPLANE_RATE_LIMIT_REQUESTS_PER_MINUTE and AGENTPLANE_RATE_LIMIT_CONCURRENT_RUNS', () => {
    it('are unlimited when unset or empty, and take whole numbers from 1', () => {
      assert.deepEqual(
        readConfig({ AGENTPLANE_RATE_LIMIT_REQUESTS_PER_MINUTE: '', AGENTPLANE_RATE_LIMIT_CONCURRENT_RUNS: '' }).rateLimits,
        {
          requestsPerMinute: undefined,
          concurrentRuns: undefined,
          projectRequestsPerMinute: undefined,
          projectConcurrentRuns: undefined,
        },
      );
      assert.equal(readConfig({ AGENTPLANE_RATE_LIMIT_REQUESTS_PER_MINUTE: '1' }).rateLimits.requestsPerMinute, 1);
      assert.equal(readConfig({ AGENTPLANE_RATE_LIMIT_CONCURRENT_RUNS: '100000' }).rateLimits.concurrentRuns, 100_000);
    });

    for (const name of ['AGENTPLANE_RATE_LIMIT_REQUESTS_PER_MINUTE', 'AGENTPLANE_RATE_LIMIT_CONCURRENT_RUNS']) {
      for (const text of ['0', '-5', '2.5', 'ten', '99999999']) {
        it(`${name} rejects '${text}', naming the variable and the value`, () => {
          configError(() => readConfig({ [name]: text }), name, `'${text}'`);
        });
      }
    }
  });

  describe('AGENTPLANE_RATE_LIMIT_PROJECT_REQUESTS_PER_MINUTE and AGENTPLANE_RATE_LIMIT_PROJECT_CONCURRENT_RUNS', () => {
    it("bound each project's keys together when set, from 1", () => {
      const { rateLimits } = readConfig({
        AGENTPLANE_RATE_LIMIT_PROJECT_REQUESTS_PER_MINUTE: '10000000',
        AGENTPLANE_RATE_LIMIT_PROJECT_CONCURRENT_RUNS: '1',
      });
      assert.equal(rateLimits.projectRequestsPerMinute, 10_000_000);
      assert.equal(rateLimits.projectConcurrentRuns, 1);
    });

    for (const name of ['AGENTPLANE_RATE_LIMIT_PROJECT_REQUESTS_PER_MINUTE', 'AGENTPLANE_RATE_LIMIT_PROJECT_CONCURRENT_RUNS']) {
      for (const text of ['0', '-5', '2.5', 'ten', '99999999']) {
        it(`${name} rejects '${text}', naming the variable and the value`, () => {
          configError(() => readConfig({ [name]: text }), name, `'${text}'`);
        });
      }
    }
  });

  describe('AGENTPLANE_BASE_PATH', () => {
    for (const [text, path] of [
      ['', ''],
      ['/', ''],
      ['agentplane', '/agentplane'],
      ['/agentplane/', '/agentplane'],
      ['/tools/agent-plane', '/tools/agent-plane'],
    ] as const) {
      it(`reads '${text}' as '${path}'`, () => {
        assert.equal(readConfig({ AGENTPLANE_BASE_PATH: text }).basePath, path);
      });
    }

    for (const text of ['/a b', '/a;b', '/../x', '/a//b', '/"x"', '/a?b', '/%2e']) {
      it(`rejects '${text}', naming the variable and the value`, () => {
        configError(() => readConfig({ AGENTPLANE_BASE_PATH: text }), 'AGENTPLANE_BASE_PATH', `'${text}'`);
      });
    }
  });

  describe('AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT', () => {
    it("lets a project's files hold 100 GiB when unset; takes whole GiB from 1 to 1,000,000, refusing anything else", () => {
      assert.equal(readConfig({}).fileStorageGiBPerProject, 100);
      assert.equal(readConfig({ AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT: '1' }).fileStorageGiBPerProject, 1);
      for (const text of ['0', '1000001', '1.5', '10G'])
        configError(
          () => readConfig({ AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT: text }),
          'AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT',
          `'${text}'`,
        );
    });
  });

  describe('AGENTPLANE_EXPERIMENTS_PER_PROJECT', () => {
    it('lets a project have 10 experiments queued or running when unset; takes 1 to 1,000, refusing anything else', () => {
      assert.equal(readConfig({}).experimentsPerProject, 10);
      assert.equal(readConfig({ AGENTPLANE_EXPERIMENTS_PER_PROJECT: '1' }).experimentsPerProject, 1);
      assert.equal(readConfig({ AGENTPLANE_EXPERIMENTS_PER_PROJECT: '1000' }).experimentsPerProject, 1000);
      for (const text of ['0', '1001', '2.5', 'ten'])
        configError(() => readConfig({ AGENTPLANE_EXPERIMENTS_PER_PROJECT: text }), 'AGENTPLANE_EXPERIMENTS_PER_PROJECT', `'${text}'`);
    });
  });

  describe('AGENTPLANE_IDEMPOTENCY_KEY_HOURS', () => {
    it('keeps a key 24 hours when unset; takes whole hours from 1 to 720, refusing anything else', () => {
      assert.equal(readConfig({}).idempotencyKeyHours, 24);
      assert.equal(readConfig({ AGENTPLANE_IDEMPOTENCY_KEY_HOURS: '720' }).idempotencyKeyHours, 720);
      for (const text of ['0', '721', '1.5', '24h'])
        configError(() => readConfig({ AGENTPLANE_IDEMPOTENCY_KEY_HOURS: text }), 'AGENTPLANE_IDEMPOTENCY_KEY_HOURS', `'${text}'`);
    });
  });

  describe('AGENTPLANE_SESSION_TTL_SECONDS', () => {
    it('is 8 hours when unset or empty, and takes whole seconds from a minute to 30 days', () => {
      assert.equal(readConfig({ AGENTPLANE_SESSION_TTL_SECONDS: '' }).sessionTtlSeconds, 8 * 3600);
      assert.equal(readConfig({ AGENTPLANE_SESSION_TTL_SECONDS: '60' }).sessionTtlSeconds, 60);
      for (const text of ['59', '2592001', '1h', '-1'])
        configError(() => readConfig({ AGENTPLANE_SESSION_TTL_SECONDS: text }), 'AGENTPLANE_SESSION_TTL_SECONDS', `'${text}'`);
    });
  });

  describe('AGENTPLANE_SHUTDOWN_GRACE_SECONDS', () => {
    it("is 25 s when unset or empty, below the chart pods' 30 s to stop, and takes whole seconds from 1 to an hour", () => {
      assert.equal(readConfig({ AGENTPLANE_SHUTDOWN_GRACE_SECONDS: '' }).shutdownGraceSeconds, 25);
      assert.equal(readConfig({ AGENTPLANE_SHUTDOWN_GRACE_SECONDS: '1' }).shutdownGraceSeconds, 1);
      assert.equal(shutdownGraceSecondsOf({ AGENTPLANE_SHUTDOWN_GRACE_SECONDS: '3600' }), 3600);
      for (const text of ['0', '3601', '2.5', '30s'])
        configError(() => readConfig({ AGENTPLANE_SHUTDOWN_GRACE_SECONDS: text }), 'AGENTPLANE_SHUTDOWN_GRACE_SECONDS', `'${text}'`);
    });
  });

  describe('AGENTPLANE_EVENT_STREAMS_*', () => {
    it('caps 20 streams per key and 1000 per process, disconnecting after 30 s unread, when unset; refuses what is no whole number in range', () => {
      assert.deepEqual(readConfig({}).eventStreamLimits, { perKey: 20, perProcess: 1000, stallSeconds: 30 });
      configError(() => readConfig({ AGENTPLANE_EVENT_STREAMS_PER_KEY: '0' }), 'AGENTPLANE_EVENT_STREAMS_PER_KEY', "'0'");
      configError(() => readConfig({ AGENTPLANE_EVENT_STREAMS_PER_PROCESS: 'many' }), 'AGENTPLANE_EVENT_STREAMS_PER_PROCESS', "'many'");
      configError(() => readConfig({ AGENTPLANE_EVENT_STREAM_STALL_SECONDS: '3601' }), 'AGENTPLANE_EVENT_STREAM_STALL_SECONDS', "'3601'");
    });
  });

  describe('AGENTPLANE_API_REQUESTS_*', () => {
    it('works on 8 requests at once, queueing 200 per project for 30 s at most, and takes turns by time above 20 % busy for 1 s at most, when unset; refuses what is no whole number in range', () => {
      assert.deepEqual(readConfig({}).admission, {
        atOnce: 8,
        queuedPerProject: 200,
        queueWaitSeconds: 30,
        busyUtilization: 0.2,
        shareWaitMs: 1000,
      });
      assert.deepEqual(
        readConfig({ AGENTPLANE_API_FAIR_SHARE_BUSY_PERCENT: '100', AGENTPLANE_API_FAIR_SHARE_MAX_WAIT_MS: '0' }).admission,
        { atOnce: 8, queuedPerProject: 200, queueWaitSeconds: 30, busyUtilization: 1, shareWaitMs: 0 },
      );
      configError(() => readConfig({ AGENTPLANE_API_FAIR_SHARE_BUSY_PERCENT: '101' }), 'AGENTPLANE_API_FAIR_SHARE_BUSY_PERCENT', "'101'");
      configError(() => readConfig({ AGENTPLANE_API_FAIR_SHARE_MAX_WAIT_MS: 'soon' }), 'AGENTPLANE_API_FAIR_SHARE_MAX_WAIT_MS', "'soon'");
      configError(() => readConfig({ AGENTPLANE_API_REQUESTS_AT_ONCE: '0' }), 'AGENTPLANE_API_REQUESTS_AT_ONCE', "'0'");
      configError(
        () => readConfig({ AGENTPLANE_API_REQUESTS_QUEUED_PER_PROJECT: '-1' }),
        'AGENTPLANE_API_REQUESTS_QUEUED_PER_PROJECT',
        "'-1'",
      );
      configError(() => readConfig({ AGENTPLANE_API_QUEUE_WAIT_SECONDS: '601' }), 'AGENTPLANE_API_QUEUE_WAIT_SECONDS', "'601'");
    });
  });

  describe('AGENTPLANE_WEBHOOK_*', () => {
    it('refuses a flag that is not true or false, and counts that are not whole numbers in range, naming the variable', () => {
      configError(() => readConfig({ AGENTPLANE_WEBHOOK_ALLOW_PRIVATE: 'yes' }), 'AGENTPLANE_WEBHOOK_ALLOW_PRIVATE', "'yes'");
      configError(() => readConfig({ AGENTPLANE_WEBHOOK_RETRY_INITIAL_MS: '0' }), 'AGENTPLANE_WEBHOOK_RETRY_INITIAL_MS', "'0'");
      configError(() => readConfig({ AGENTPLANE_WEBHOOK_MAX_ATTEMPTS: '51' }), 'AGENTPLANE_WEBHOOK_MAX_ATTEMPTS', "'51'");
      configError(() => readConfig({ AGENTPLANE_WEBHOOK_DISABLE_AFTER: '1.5' }), 'AGENTPLANE_WEBHOOK_DISABLE_AFTER', "'1.5'");
    });
  });

  describe('AGENTPLANE_RETENTION_*', () => {
    it('keeps run event logs and webhook deliveries 30 days, step payloads and usage rows 90, extraction leftovers 7 and the audit log for good when unset; takes whole days, refusing anything else', () => {
      assert.deepEqual(readConfig({}).retention, {
        runEventsDays: 30,
        webhookDeliveriesDays: 30,
        stepPayloadsDays: 90,
        usageRecordsDays: 90,
        extractionLeftoversDays: 7,
        auditLogsDays: null,
      });
      assert.deepEqual(
        readConfig({ AGENTPLANE_RETENTION_RUN_EVENTS_DAYS: '7', AGENTPLANE_RETENTION_WEBHOOK_DELIVERIES_DAYS: '3650' }).retention,
        { ...readConfig({}).retention, runEventsDays: 7, webhookDeliveriesDays: 3650 },
      );
      configError(() => readConfig({ AGENTPLANE_RETENTION_RUN_EVENTS_DAYS: '0' }), 'AGENTPLANE_RETENTION_RUN_EVENTS_DAYS', "'0'");
      configError(
        () => readConfig({ AGENTPLANE_RETENTION_WEBHOOK_DELIVERIES_DAYS: '30d' }),
        'AGENTPLANE_RETENTION_WEBHOOK_DELIVERIES_DAYS',
        "'30d'",
      );
      configError(
        () => readConfig({ AGENTPLANE_RETENTION_USAGE_RECORDS_DAYS: '3651' }),
        'AGENTPLANE_RETENTION_USAGE_RECORDS_DAYS',
        "'3651'",
      );
      configError(() => readConfig({ AGENTPLANE_RETENTION_AUDIT_LOGS_DAYS: 'never' }), 'AGENTPLANE_RETENTION_AUDIT_LOGS_DAYS', "'never'");
    });
  });

  describe('AGENTPLANE_TOOLS_ALLOW_PRIVATE', () => {
    it('is false when unset or empty, and takes true or false', () => {
      assert.equal(readConfig({}).toolsAllowPrivate, false);
      assert.equal(readConfig({ AGENTPLANE_TOOLS_ALLOW_PRIVATE: '' }).toolsAllowPrivate, false);
      assert.equal(readConfig({ AGENTPLANE_TOOLS_ALLOW_PRIVATE: 'true' }).toolsAllowPrivate, true);
    });

    for (const text of ['yes', '1', 'TRUE']) {
      it(`rejects '${text}', naming the variable and the value`, () => {
        configError(() => readConfig({ AGENTPLANE_TOOLS_ALLOW_PRIVATE: text }), 'AGENTPLANE_TOOLS_ALLOW_PRIVATE', `'${text}'`);
      });
    }
  });

  describe('S3 settings', () => {
    it('are absent when none is set, and S3_REGION alone does not ask for them', () => {
      assert.equal(readConfig({}).s3, undefined);
      assert.equal(readConfig({ S3_REGION: 'us-east-1' }).s3, undefined);
    });

    it('leave the region out when S3_REGION is unset', () => {
      assert.deepEqual(readConfig(S3).s3, {
        endpoint: S3.S3_ENDPOINT,
        bucket: 'agentplane',
        accessKey: 'access',
        secretKey: 'secret',
        region: undefined,
      });
    });

    for (const given of Object.keys(S3) as (keyof typeof S3)[]) {
      it(`set partly (only ${given}) are an error naming each missing variable and not the one given`, () => {
        const missing = Object.keys(S3).filter((name) => name !== given);
        const error = configError(() => readConfig({ [given]: S3[given] }), ...missing);
        assert.ok(!error.message.includes(given), `'${error.message}' names ${given}, which is set`);
      });
    }

    it('set partly (one missing) name exactly that one', () => {
      const { S3_SECRET_KEY: _, ...rest } = S3;
      const error = configError(() => readConfig(rest), 'S3_SECRET_KEY');
      for (const name of Object.keys(rest)) assert.ok(!error.message.includes(name), `'${error.message}' names ${name}, which is set`);
    });

    it('count an empty value as missing', () => {
      configError(() => readConfig({ ...S3, S3_BUCKET: '' }), 'S3_BUCKET');
    });
  });

  describe('AGENTPLANE_ADMIN_KEY', () => {
    it('accepts ap_ followed by 20 to 120 letters, digits, _ or -', () => {
      for (const key of [`ap_${'x'.repeat(20)}`, `ap_${'Z9_-'.repeat(30)}`, ADMIN_KEY])
        assert.equal(readConfig({ AGENTPLANE_ADMIN_KEY: key }).adminKey, key);
    });

    for (const [what, key] of [
      ['empty', ''],
      ['without the ap_ prefix', 'x'.repeat(30)],
      ['with another prefix', `key_${'x'.repeat(30)}`],
      ['too short', `ap_${'x'.repeat(19)}`],
      ['too long', `ap_${'x'.repeat(121)}`],
      ['with a space', `ap_${'x'.repeat(20)} y`],
      ['with a newline', `ap_${'x'.repeat(20)}\n`],
      ['with other punctuation', `ap_${'x'.repeat(20)}.!`],
    ] as const) {
      it(`rejects a key ${what}, naming the variable without echoing the secret`, () => {
        const error = configError(() => readConfig({ AGENTPLANE_ADMIN_KEY: key }), 'AGENTPLANE_ADMIN_KEY');
        if (key.length > 0) assert.ok(!error.message.includes(key.trim()), 'the message repeats the key');
      });
    }
  });
});

describe('requireServices', () => {
  const complete = { DATABASE_URL: 'postgres://db/agentplane', TEMPORAL_ADDRESS: 'temporal:7233' };

  it('returns the database URL and Temporal address when everything is set (S3 or a blob directory)', () => {
    assert.deepEqual(requireServices(readConfig({ ...complete, ...S3 })), {
      databaseUrl: complete.DATABASE_URL,
      temporalAddress: complete.TEMPORAL_ADDRESS,
    });
    assert.deepEqual(requireServices(readConfig({ ...complete, AGENTPLANE_BLOB_DIR: '/blobs' })), {
      databaseUrl: complete.DATABASE_URL,
      temporalAddress: complete.TEMPORAL_ADDRESS,
    });
  });

  it('names DATABASE_URL when it alone is missing', () => {
    const error = configError(() => requireServices(readConfig({ TEMPORAL_ADDRESS: 'temporal:7233', ...S3 })), 'DATABASE_URL');
    assert.ok(!error.message.includes('TEMPORAL_ADDRESS') && !error.message.includes('S3_'));
  });

  it('names TEMPORAL_ADDRESS when it alone is missing', () => {
    const error = configError(
      () => requireServices(readConfig({ DATABASE_URL: 'postgres://db', AGENTPLANE_BLOB_DIR: '/blobs' })),
      'TEMPORAL_ADDRESS',
    );
    assert.ok(!error.message.includes('DATABASE_URL') && !error.message.includes('S3_'));
  });

  it('names both ways to store blobs when neither is set', () => {
    const error = configError(() => requireServices(readConfig(complete)), 'S3_ENDPOINT', 'AGENTPLANE_BLOB_DIR');
    assert.ok(!error.message.includes('DATABASE_URL') && !error.message.includes('TEMPORAL_ADDRESS'));
  });

  it('names every missing variable at once', () => {
    configError(() => requireServices(readConfig({})), 'DATABASE_URL', 'TEMPORAL_ADDRESS', 'S3_ENDPOINT', 'AGENTPLANE_BLOB_DIR');
  });

  it('counts empty values as missing', () => {
    configError(
      () => requireServices(readConfig({ DATABASE_URL: '', TEMPORAL_ADDRESS: '', AGENTPLANE_BLOB_DIR: '' })),
      'DATABASE_URL',
      'TEMPORAL_ADDRESS',
      'AGENTPLANE_BLOB_DIR',
    );
  });
});
