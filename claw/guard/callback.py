"""`GuardCallback`: the trainer's new weights are a candidate; the engine serves the last promoted version.

After every rollout batch `PublishAndCommit` hands the push to `publish` instead of syncing the
trainer's weights. `publish`:

1. adds the batch's judged rewards to the live reward of the version that generated each turn;
2. gathers the evidence (claw/guard/decision.py): OPE of the candidate on the newest judged turns
   the served version generated (from the sample store), the served version's own value on those
   turns, the drift bound, and the live rewards of the served and the previous promoted versions;
3. decides: promote / hold / rollback — or applies a manual rollback request (claw/rollback.py);
4. writes the promoted weights (on promotion), then `guard/served.json` (atomically), then one line
   of `guard.jsonl` (decision, evidence, cost), and only then loads the engine;
5. on a hold that would leave the engine more than `max_lag` versions behind the trainer, resets the
   trainer to the served weights (the queue drops samples more than `max_staleness` versions old,
   so without the reset a long hold would starve training); after a rollback, resets the trainer
   when `after_rollback=reset`. The optimizer state is kept in both cases.

Costs: `guard/cost_s` is the guard's own time (evidence + writing weights + state); the engine load
is `engine/sync_s`, as without the guard; the time spent waiting for a canary, `guard/canary_wait_s`.

Checks (`checks`, decided by claw/guard/decision.py): `ope` and `kl` read the logged judged turns;
`probe` scores the candidate on a held-out probe set with the trainer's weights (claw/guard/probe.py;
its cost is in `guard/cost_s` and `guard/probe_s`). The served version's probe score is the one it
had as a candidate (kept in served.json); the initial version is scored at the start of a fresh run.

`canary` (claw/guard/canary.py; engine=hf, source=proxy or simulated_user schedule=free): a candidate
that passes the other checks is served to a fraction of new sessions beside the promoted version, and
`publish` **waits** (at most `guard.canary.timeout_s`) for the sequential test on the two arms' judged
rewards: promote, reject (a hold; the trainer restarts from the served weights with
`after_reject=reset`), or inconclusive / timed out (a hold). Why the trainer waits: claw/guard/canary.py.

Not built: LoRA (resetting a LoRA trainer from merged weights) and DDP (a reset would have to reach
every rank); `build_guard` refuses both, and canary on an engine that holds one weight set (vLLM).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from pathlib import Path

import lightning as L
import torch

from claw.guard.canary import CanaryResult, CanarySettings, CanaryTraffic
from claw.guard.decision import Decision, Evidence, LiveReward, Thresholds, decide
from claw.guard.logged import candidate_logprobs, recent_judged
from claw.guard.ope import ESTIMATORS, estimate, k3_kl, log_importance_weights, on_policy
from claw.guard.probe import ModelGenerator
from claw.guard.record import decision_line, decision_metrics, decision_summary
from claw.guard.state import GuardDir, Promoted, ServedState
from claw.rollout.store import JsonlLog

log = logging.getLogger(__name__)


class GuardCallback(L.Callback):
    def __init__(
        self,
        run_dir: str | Path,
        engine,
        pad_id: int,
        thresholds: Thresholds,
        window: int = 64,
        estimator: str = "snis",
        clip: float = 10.0,
        weight: str = "sequence",
        max_lag: int = 2,
        after_rollback: str = "reset",
        keep_promoted: int = 3,
        micro_batch_size: int = 8,
        checks: tuple[str, ...] = ("ope", "kl"),
        probe=None,
        tokenizer=None,
        canary: CanarySettings | None = None,
        observe: bool = False,
    ) -> None:
        if observe and canary is not None:
            raise ValueError("guard.observe=true with a canary: a shadow guard serves no canary; drop one of them")
        if estimator not in ESTIMATORS:
            raise ValueError(f"guard.ope.estimator must be one of {sorted(ESTIMATORS)} (got {estimator!r})")
        if after_rollback not in ("reset", "continue"):
            raise ValueError(f"guard.after_rollback must be reset or continue (got {after_rollback!r})")
        if keep_promoted < 2:
            raise ValueError(
                "guard.keep_promoted must be >= 2: a rollback needs the previous promoted version "
                f"(got {keep_promoted})"
            )
        self.run_dir = Path(run_dir)
        self.engine, self.pad_id, self.thresholds = engine, pad_id, thresholds
        self.window, self.estimator, self.clip, self.weight = window, estimator, clip, weight
        self.max_lag, self.after_rollback, self.keep_promoted = max_lag, after_rollback, keep_promoted
        self.micro_batch_size = micro_batch_size
        if "probe" in checks and (probe is None or tokenizer is None):
            raise ValueError(
                "guard.checks has probe: the guard needs a probe set and the tokenizer (build_guard makes them)"
            )
        self.checks, self.probe, self.tokenizer = tuple(checks), probe, tokenizer
        if ("canary" in checks) != (canary is not None):
            raise ValueError("guard.checks has canary exactly when the guard gets canary settings (build_guard)")
        if canary is not None and max_lag < 1:
            raise ValueError("guard.checks has canary: guard.max_lag must be >= 1 (claw/guard/canary.py says why)")
        self.canary = canary
        self.observe = observe  # shadow mode: decide and log, always promote (guard.jsonl `would`)
        self.traffic = CanaryTraffic()  # the proxy routes sessions by it (train.py: source.serve_canary)
        self._probe_s = 0.0
        self.dir = GuardDir(run_dir)
        self.decisions = JsonlLog(self.run_dir / "guard.jsonl", fsync=True)  # a torn last line is cut on reopening
        self.state = ServedState()
        self._sync_s = 0.0

    # -- start: what does the engine serve? ----------------------------------------------------
    def on_fit_start(self, trainer, module) -> None:
        """Runs after the checkpoint restored the module (PublishAndCommit defers its start-up sync to here)."""
        state = self.dir.load()
        v = module.policy_version
        if state is None:  # a fresh run: the initial weights are the first promoted version
            name = f"v{v}-0.safetensors"
            self.dir.save_weights(module.export_weights(), name)
            self.state = ServedState(
                version=v, engine_version=v, promoted=[Promoted(v, name, v)], labels={v: v}, promotions=1
            )
            if self.probe is not None:
                self.state.probe[v] = self.probe.score(ModelGenerator(module.model, self.tokenizer, v)).score
            self.dir.save(self.state)
            if v > 0:  # a run that turned the guard on at resume: the engine starts from its initial weights
                self._push(v)
            return
        self.state = state
        if state.canary is not None:  # killed while a canary ran: the candidate was never promoted
            self._cut_canary(state)
        label = max(
            state.engine_version, v
        )  # labels never go back: the store may hold turns tagged up to engine_version
        target = self.dir.pending_request()
        if target is not None and self._rollback(
            module, target, label, Decision("rollback", ("manual",)), t0=time.perf_counter()
        ):
            return
        state.engine_version = label
        state.labels[label] = state.version
        self.dir.save(state)
        self._push(label)
        if (
            self.probe is not None and state.version not in state.probe
        ):  # probe turned on at resume: score what the engine serves
            state.probe[state.version] = self.probe.score(self.engine).score
            self.dir.save(state)
        print(
            f"[claw] guard: serving version {state.version} (engine label {label}); trainer at version {v}", flush=True
        )

    # -- every rollout batch -------------------------------------------------------------------
    def publish(self, trainer, module, batch) -> float:
        """Decide about the candidate (`module.policy_version`, already bumped) and load the engine accordingly.
        Returns the seconds spent loading the engine (0 on a hold)."""
        t0 = time.perf_counter()
        c, st = module.policy_version, self.state
        self._add_live(batch)
        target = self.dir.pending_request()
        if target is not None:
            decision = Decision("rollback", ("manual",))
            if self._rollback(module, target, c, decision, t0):
                return self._sync_s
        evidence = self.evidence(module)
        decision = decide(evidence, self.thresholds, self.checks)
        would = None
        if self.observe:  # shadow mode: the decision is logged as what the guard would do; every candidate is served
            would, decision = decision, Decision("promote", ())
        if decision.action == "rollback":
            self._rollback(module, st.promoted[-2].version, c, decision, t0, evidence)
            return self._sync_s
        canary: CanaryResult | None = None
        if decision.action == "promote" and self.canary is not None:  # the other checks passed: live traffic decides
            decision, canary = self._canary_decision(module, c, evidence)
        if decision.action == "promote":
            name = f"v{c}-{st.promotions}.safetensors"
            weights = module.export_weights()
            self.dir.save_weights(weights, name)
            st.promoted.append(Promoted(c, name, c))
            st.promotions += 1
            st.version = st.engine_version = c
            st.labels[c] = c
            if evidence.probe_candidate is not None:
                st.probe[c] = evidence.probe_candidate
            dropped = st.promoted[: -self.keep_promoted]
            st.promoted = st.promoted[-self.keep_promoted :]
            st.probe = {p.version: st.probe[p.version] for p in st.promoted if p.version in st.probe}
            st.canary = None
            self._record(c, decision, evidence, t0, module, batch, would=would)
            for p in dropped:
                self.dir.remove(p.file)
            self._push(c, weights)
            self._end_canary()  # after the push: the candidate's arm never falls back to the old weights
            return self._sync_s
        self._end_canary()
        reset = c - st.engine_version > self.max_lag  # never after a canary: it ran only within max_lag
        if (
            reset
        ):  # the engine would fall more than max_lag versions behind: restart the trainer from the served weights
            weights = self.dir.load_weights(st.promoted[-1].file)
            module.model.load_state_dict(weights)
            st.engine_version = c
            st.labels[c] = st.version
        rejected = canary is not None and canary.verdict == "reject" and self.canary.after_reject == "reset"
        if rejected:  # the engine already serves these weights (under their own label): nothing to push
            module.model.load_state_dict(self.dir.load_weights(st.promoted[-1].file))
        self._record(c, decision, evidence, t0, module, batch, reset_trainer=reset or rejected)
        if reset:
            self._push(c, weights)
            return self._sync_s
        return 0.0

    def evidence(self, module) -> Evidence:
        st = self.state
        labels = {label for label, version in st.labels.items() if version == st.version}
        prev = st.live.get(st.promoted[-2].version, LiveReward()) if len(st.promoted) > 1 else None
        ev = Evidence(live_served=st.live.get(st.version, LiveReward()), live_previous=prev)
        if self.probe is not None:
            t0 = time.perf_counter()
            ev.probe_candidate = self.probe.score(
                ModelGenerator(module.model, self.tokenizer, module.policy_version)
            ).score
            ev.probe_served = st.probe.get(st.version)
            self._probe_s = time.perf_counter() - t0
        if "ope" not in self.checks and "kl" not in self.checks:
            return ev
        samples = recent_judged(self.run_dir / "samples.jsonl", lambda s: s.policy_version in labels, self.window)
        if samples:
            cand, beh, mask, rewards = candidate_logprobs(
                module.model, samples, self.pad_id, self.micro_batch_size, module.device
            )
            log_w = log_importance_weights(cand, beh, mask, self.weight)
            ev.candidate = estimate(log_w, rewards, self.estimator, self.clip)
            ev.served = on_policy(rewards)
            ev.kl = k3_kl(cand, beh, mask)
        return ev

    # -- canary traffic (claw/guard/canary.py) ---------------------------------------------------
    def _canary_decision(self, module, c: int, evidence: Evidence) -> tuple[Decision, CanaryResult | None]:
        """Promote or hold candidate `c` by its canary (None: no canary ran); its evidence goes into `evidence`."""
        lag = c - self.state.engine_version
        if lag > self.max_lag:  # a failed canary could not reset the trainer without reusing label c
            reason = f"no canary: a failed one would leave the engine {lag} > max_lag={self.max_lag} versions behind"
            return Decision("hold", (reason,)), None
        canary = self._run_canary(module, c)
        evidence.canary = canary.to_json()
        action = "promote" if canary.verdict == "promote" else "hold"
        return Decision(action, (canary.reason(self.canary.test),)), canary

    def _run_canary(self, module, c: int) -> CanaryResult:
        """Serve the candidate to its arm and wait for the decision (the canary keeps running until `_end_canary`)."""
        st, cfg = self.state, self.canary
        st.canaries += 1
        canary_id = f"c{st.canaries}-v{c}"
        st.canary = {"id": canary_id, "version": c, "fraction": cfg.fraction, "started": time.time()}
        self.dir.save(st)  # before the candidate is served: a restart knows this canary was cut
        if self.engine is not None:
            self.engine.load_canary(iter(module.export_weights().items()), version=c)
        self.traffic.start(canary_id, cfg.fraction, salt=f"v{c}", bounds=(cfg.test.low, cfg.test.high))
        print(
            f"[claw] guard: canary {canary_id}: version {c} serves {cfg.fraction:.0%} of new sessions beside version "
            f"{st.version}; training waits for the decision (at most {cfg.timeout_s:g}s)",
            flush=True,
        )
        return self.traffic.wait(c, cfg, interrupted=lambda: self.dir.pending_request() is not None)

    def _end_canary(self) -> None:
        """Every session back on the served weights; the engine drops the candidate's copy. Idempotent."""
        if self.canary is None or self.traffic.canary_id is None:
            return
        self.traffic.stop()
        if self.engine is not None:
            self.engine.stop_canary()
        self.state.canary = None

    def _cut_canary(self, state) -> None:
        """A restart found a canary in flight: record that it ended undecided (the promoted version is served)."""
        cut = state.canary
        state.canary = None
        self.dir.save(state)
        decision = Decision("hold", (f"canary {cut['id']} cut by a restart before its decision",))
        evidence = Evidence(canary={**cut, "verdict": "cut"})
        self.decisions.append(decision_line(cut["version"], decision, evidence, state, cost_s=0.0))
        print(f"[claw] guard: canary {cut['id']} was cut by the restart; version {cut['version']} not promoted")

    # -- actions -------------------------------------------------------------------------------
    def _rollback(
        self, module, target: int, label: int, decision: Decision, t0: float, evidence: Evidence | None = None
    ) -> bool:
        """Serve promoted version `target` again under `label`. False (and a warning) when it is not kept."""
        st = self.state
        idx = next((i for i in range(len(st.promoted) - 1, -1, -1) if st.promoted[i].version == target), None)
        if idx is None:
            log.warning(
                "guard: rollback to version %d ignored: not among the kept promoted versions %s",
                target,
                [p.version for p in st.promoted],
            )
            print(
                f"[claw] guard: rollback to version {target} ignored (kept: {[p.version for p in st.promoted]})",
                flush=True,
            )
            self.dir.clear_request()
            return False
        dropped = st.promoted[idx + 1 :]
        st.promoted = st.promoted[: idx + 1]
        st.probe = {v: x for v, x in st.probe.items() if st.find(v) is not None}
        st.version, st.engine_version = target, label
        st.labels[label] = target
        weights = self.dir.load_weights(st.promoted[-1].file)
        reset = self.after_rollback == "reset"
        if reset:
            module.model.load_state_dict(weights)
        self._record(label, decision, evidence or Evidence(), t0, module, None, reset_trainer=reset)
        self.dir.clear_request()
        for p in dropped:
            self.dir.remove(p.file)
        self._push(label, weights)
        print(f"[claw] guard: rolled back to version {target} ({'; '.join(decision.reasons)})", flush=True)
        return True

    def _add_live(self, batch) -> None:
        st = self.state
        by_version: dict[int, list[float]] = defaultdict(list)
        for label, reward, has in zip(
            batch.policy_version.tolist(), batch.rewards.tolist(), batch.reward_mask.tolist()
        ):
            if has and label in st.labels:
                by_version[st.labels[label]].append(float(reward))
        for version, rewards in by_version.items():
            st.live[version] = st.live.get(version, LiveReward()).add(rewards)

    def _record(
        self,
        step: int,
        decision: Decision,
        ev: Evidence,
        t0: float,
        module,
        batch,
        reset_trainer: bool = False,
        would: Decision | None = None,
    ) -> None:
        """served.json first (what the engine is about to serve), then the decision line, then metrics
        (claw/guard/record.py). `would`: in shadow mode (guard.observe), what the guard decided but did not do."""
        st = self.state
        self.dir.save(st)
        cost = time.perf_counter() - t0 - (ev.canary["waited_s"] if ev.canary else 0.0)  # the wait: canary_wait_s
        self.decisions.append(decision_line(step, decision, ev, st, cost, reset_trainer, would))
        if batch is not None:  # inside a training step: Lightning's logger; at fit start there is none
            metrics = decision_metrics(decision, ev, st, cost, reset_trainer, would, self._probe_s)
            module.log_dict(metrics, on_step=True, batch_size=batch.size)
            module.log("served", float(st.version), prog_bar=True, logger=False, batch_size=batch.size)
        summary = decision_summary(decision, would)
        log.info("guard step %d: %s -> serving version %d%s", step, decision.action, st.version, summary)

    def _push(self, label: int, weights: dict[str, torch.Tensor] | None = None) -> None:
        """Load the served weights into the engine under `label` (state and decision are already on disk)."""
        self._sync_s = 0.0
        if self.engine is None:
            return
        if weights is None:
            weights = self.dir.load_weights(self.state.promoted[-1].file)
        t0 = time.perf_counter()
        self.engine.load_weights(iter(weights.items()), version=label)
        self._sync_s = time.perf_counter() - t0
