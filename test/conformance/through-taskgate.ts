/**
 * What the runs through taskgate in front of the project's conformance fixtures (conformance-server.js,
 * SDK 1.32; conformance-modern-server.js, SDK v2) share: the gateways' flags and the tables of the runs
 * whose outcome does not depend on which of them is behind.
 */
import {
  SCENARIOS_0_1_16,
  SCENARIOS_2025_REQUIREMENTS,
  TASKGATE_ANSWERS_JSON,
  table,
  type Expected,
} from './tables.js';
import { TASK_POLICY_2026 } from './task-policy.js';

/**
 * tasks-mrtr-composition (and input-required scenarios) leave tasks waiting for input nobody gives: on
 * SIGTERM taskgate would let them run for the default 30 s shutdownGrace.
 */
const QUICK_SHUTDOWN = ['--shutdown-grace', '1000'];

/**
 * The flags of every gateway in front of these fixtures: the 2026-07-28 runs' task policy (it makes none
 * of the 2025 scenarios' tools a task), and a quick shutdown.
 */
export const GATEWAY_FLAGS = [...TASK_POLICY_2026, ...QUICK_SHUTDOWN];

export const THROUGH_TASKGATE_0_1_16 = table(SCENARIOS_0_1_16, {
  'server-sse-polling': TASKGATE_ANSWERS_JSON,
});
export const THROUGH_TASKGATE_2025_REQUIREMENTS = table(SCENARIOS_2025_REQUIREMENTS, {
  'server-sse-polling': TASKGATE_ANSWERS_JSON,
});

/**
 * The input-required-result scenarios (and tasks-mrtr-composition) check input keys the server names
 * (`user_name`, ...) and its requestState: through taskgate, a 2025 server's elicitation/create becomes an
 * input request under a key taskgate names, so these can pass only in front of a server that answers with
 * an InputRequiredResult itself (an SDK v2 fixture).
 */
const NEEDS_MRTR_SERVER = {
  fails:
    'conformance-server.js has no test_input_required_result_* tool, and a 2025 server could not name the input keys and requestState these check',
};

/**
 * 0.2.0-alpha.12 `--requirements 2026-07-28` through taskgate's modern front in front of
 * conformance-server.js: the scored scenarios, then those it runs unscored (the tasks extension, and three
 * pending ones), in the order it runs them. The runs in front of the SDK v2 fixture start from it.
 */
export const THROUGH_TASKGATE_2026: Record<string, Expected> = {
  'server-stateless': 'passes',
  'completion-complete': 'passes',
  'tools-list': 'passes',
  'tools-call-simple-text': 'passes',
  'tools-call-image': 'passes',
  'tools-call-audio': 'passes',
  'tools-call-embedded-resource': 'passes',
  'tools-call-mixed-content': 'passes',
  'tools-call-error': 'passes',
  'tools-call-with-progress': 'passes',
  'server-sse-multiple-streams': 'passes',
  'resources-list': 'passes',
  'resources-read-text': 'passes',
  'resources-read-binary': 'passes',
  'resources-templates-read': 'passes',
  'sep-2164-resource-not-found': 'passes',
  'prompts-list': 'passes',
  'prompts-get-simple': 'passes',
  'prompts-get-with-args': 'passes',
  'prompts-get-embedded-resource': 'passes',
  'prompts-get-with-image': 'passes',
  'dns-rebinding-protection': 'passes',
  caching: 'passes',
  'input-required-result-basic-elicitation': NEEDS_MRTR_SERVER,
  'input-required-result-basic-sampling': NEEDS_MRTR_SERVER,
  'input-required-result-basic-list-roots': NEEDS_MRTR_SERVER,
  'input-required-result-request-state': NEEDS_MRTR_SERVER,
  'input-required-result-multiple-input-requests': NEEDS_MRTR_SERVER,
  'input-required-result-multi-round': NEEDS_MRTR_SERVER,
  'input-required-result-missing-input-response': 'passes',
  'input-required-result-non-tool-request': NEEDS_MRTR_SERVER,
  'input-required-result-result-type': NEEDS_MRTR_SERVER,
  'input-required-result-unsupported-methods': 'passes',
  'input-required-result-tampered-state': NEEDS_MRTR_SERVER,
  'input-required-result-capability-check': NEEDS_MRTR_SERVER,
  'input-required-result-ignore-extra-params': 'passes',
  'input-required-result-validate-input': 'passes',
  'tasks-lifecycle': 'passes',
  'tasks-capability-negotiation': 'passes',
  'tasks-wire-fields': 'passes',
  'tasks-request-state-removal': 'passes',
  'tasks-mrtr-input': 'passes',
  'tasks-request-headers': 'passes',
  'tasks-dispatch-and-envelope': 'passes',
  'tasks-status-notifications': { checksNothing: 'it has no checks in 0.2.0-alpha.12' },
  'tasks-required-task-error': 'passes',
  'tasks-mrtr-composition': {
    fails:
      'its first round must be an InputRequiredResult naming the key user_name before any task exists: taskgate cannot know that a 2025 tool will ask for input before it runs it as a task, nor name its keys',
  },
  'json-schema-2020-12': 'passes',
  'http-header-validation': 'passes',
  'http-custom-header-server-validation': 'passes',
};
