/**
 * The operator's maintenance operations on stored mail (docs/admin-api.md
 * "Rewind", "Re-derivation", "Folder erasure"), gathered as
 * one import surface. Each lives in its own module, which names its sole
 * writer: rewind, folder erasure and re-derivation segments are written by
 * the account's sync actor (asked by the admin route; re-derivation
 * segments one step of the run's job at a time), which also writes the
 * re-derivation run state and its job (runtime/store/jobs.ts).
 *
 * Importable by the sync actor.
 */
export { rewind, rewindAssessment, type RewindAssessment, type RewindResult } from './rewind.ts';
export { erasePass, type ErasePass } from './erasure.ts';
export { applyDerivation, applyDerivations, rederivationSegment, type SegmentMessage } from './rederivation.ts';
export {
  advanceRederivation,
  rederivationRecord,
  rederivationRecordById,
  rederivationRun,
  requestRederivation,
  setRederivationCarriage,
  type RederivationAdvance,
  type RederivationCarriage,
  type RederivationRecord,
  type RederivationRun,
} from './rederivation-runs.ts';
