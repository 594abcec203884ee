// @ts-check
/**
 * Which tools of the 2026-07-28 conformance fixtures taskgate runs as tasks for the 2026 suite (first match
 * wins), as `--tool-task-support` flags: the tests through taskgate and bench/conformance-time.js use the
 * same policy, so that their runs compare.
 */
export const TASK_POLICY_2026 = [
  'test_tool_with_task=required',
  'failing_job=required',
  'slow_compute=optional',
  'protocol_error_job=optional',
  'confirm_delete=optional',
  'multi_input=optional',
  '*=forbidden',
].flatMap((rule) => ['--tool-task-support', rule]);
