"""One typed config per operation: the owner of every run setting's default (docs/reference/<op>.md).

Shared groups are mixins, so the judge, QA model and decoding are the same fields in build, eval and training:
``Calls`` (the per-call policy), ``Scoring`` (PHRBench's scorers), ``HR1Models`` / ``HR1Decoding``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from phr.config.base import OpConfig, field_order, setting
from phr.config.defaults import (
    BATCH_POLL_S,
    CALL_TIMEOUT_S,
    CONCURRENCY,
    JUDGE_MAX_TOKENS,
    MAX_RETRY_AFTER_S,
    NO_MODEL,
    OFFLINE_MODEL,
    PARAPHRASE_MAX_TOKENS,
    QA_MAX_TOKENS,
)
from phr.config.types import EvalSets

#: the paper's reference scorer (§B.2)
PAPER_SCORER = "hf:Qwen/Qwen2.5-7B-Instruct"
#: the scoring part of every `paper` preset (App. B.2): `eval phrbench`, `eval merge` / `eval score`, `score`
PAPER_SCORING: dict[str, Any] = {"scorer": PAPER_SCORER}
#: the output limit of a PHRBench run when neither the option nor a preset says one
DEFAULT_MAX_TOKENS = 2048
#: the paper's sampling (App. B.1): samples per prompt and temperature
PAPER_SAMPLES = 10
PAPER_TEMPERATURE = 0.7
#: the dataset `eval phrbench` and `score` read by default (a built folder or a repo id)
DEFAULT_DATASET = "phrbench"
#: the title of the leaderboard page (``leaderboard``, ``report``)
LEADERBOARD_TITLE = "PHRBench leaderboard"
#: the premise generator of a generated PHRBench build when neither the option nor the recipe names one (App. A.2)
DEFAULT_GENERATOR = "openai:gpt-4o"

KLDirection = Literal["earlier_reference", "later_reference"]
StepRule = Literal["paper", "abbreviation_aware"]
BCCounting = Literal["every_occurrence", "longest_match"]
Fuzzy = Literal["wrong", "correct"]
#: what B.3 score 1 (a fuzzy match) counts as unless a run says otherwise (Eq. 10: a failure)
DEFAULT_FUZZY: Fuzzy = "wrong"
#: a sampling temperature: every provider takes 0 (greedy) to 2
Temperature = Annotated[float, Field(ge=0, le=2)]
#: an output limit in tokens, or "model": the model's maximum output length
MaxTokens = Annotated[int, Field(ge=1)] | Literal["model"]
#: the one repo type vocabulary (the Hub's): a dataset repo or a model repo
RepoType = Literal["dataset", "model", "space"]
HUB_DOC = "Local hub folder (default: $PHR_HUB_DIR; unset: the Hub)."
ENDPOINT_DOC = "Hub endpoint (default: HF_ENDPOINT or huggingface.co)."
#: how one released split is split into a stand-in train and evaluation pair (phr.builders.hr1_sources)
StandIn = Literal["even-train-odd-test"]
#: the tables `eval hr1` computes, by the paper's table number: "2" = Tables 1-3 (robustness), "4" = Table 4 (SFT)
HR1Table = Literal["2", "4"]
#: the tables `eval hr1` computes unless asked otherwise
DEFAULT_HR1_TABLE: HR1Table = "2"
#: Hallucination-R1's K: paraphrases per question (§5.1), the @K of Tables 2, 3 and 7
HR1_K = 5
#: paraphrases per question of Table 4 (App. E.3)
HR1_TABLE4_K = 8
#: paraphrases per question of the SFT corpus (App. E.1)
HR1_SFT_K = 4
#: paraphrases per question of Hallucination-R1-mini (its curated file) and of the offline smoke runs
HR1_MINI_K = 4


# ---- shared groups ------------------------------------------------------------------------------------------------


class Batch(OpConfig):
    """Whether hosted calls go through the providers' batch APIs (docs/scaling.md, "Batch mode")."""

    batch: bool = setting(
        False,
        "Send the calls not in the cache through the providers' batch APIs (openai:, anthropic:, google:) at "
        "about half the token price; answers can take up to 24 h (the command waits, polling every "
        f"{BATCH_POLL_S:g} s or $PHR_BATCH_POLL_S); a command stopped while waiting resumes the same batches.",
    )


class Calls(Batch):
    """The call policy of commands that call API models."""

    timeout: float = setting(CALL_TIMEOUT_S, "Per-call timeout in seconds (API models).", gt=0)
    max_retry_after: float = setting(
        MAX_RETRY_AFTER_S,
        "Longest Retry-After (seconds) a rate-limited call waits; a server asking for more fails the call at once.",
        ge=0,
    )

    def llm_kwargs(self) -> dict:
        """Keyword arguments of ``LLM(...)`` (``batch`` only when on)."""
        batch = {"batch": True} if self.batch else {}
        return {"timeout": self.timeout, "max_retry_after": self.max_retry_after, **batch}


class Trajectory(OpConfig):
    """The choices the paper's text leaves open in the trajectory metrics (docs/metrics.md), recorded in results:
    ``phr.eval.trajectory.TrajectoryScorer`` reads them."""

    kl_direction: KLDirection = setting(
        "earlier_reference", "BUF's Delta_k direction (docs/metrics.md).", paper="§4.2, App. B.2"
    )
    step_rule: StepRule = setting("paper", "BUF step splitting (docs/metrics.md).", paper="§4.2, App. B.2")
    bc_counting: BCCounting = setting("every_occurrence", "BC cue counting (docs/metrics.md).", paper="§4.2, App. B.2")


class Scoring(Trajectory):
    """How PHRBench responses are scored (docs/metrics.md): the scorers of ``phr.eval.scorers.build_scorers``."""

    scorer: str = setting(
        OFFLINE_MODEL,
        f"Reference scorer for OL/UI/BUF/BC (paper: {PAPER_SCORER}); 'none' skips them.",
        paper="App. B.2",
    )
    judge: str = setting(
        NO_MODEL, "LLM judge for behavioural resolution of B+H responses; 'none' skips it.", paper="§5.2, App. D.1"
    )
    grader: str = setting(
        NO_MODEL, "LLM equivalence grader for free-text open-ended answers (GPQA); 'none': normalised match."
    )


class LocalHub(OpConfig):
    """Where repo ids are read from (and, for `submit`, the results repo written to)."""

    hub: Path | None = setting(None, "Local hub folder (default: $PHR_HUB_DIR; unset: the Hub).", metavar="HUBDIR")


#: the scoring settings in the order of their flags (scorer, judge, grader, then the trajectory choices)
SCORING_FIELDS = tuple(field_order(Scoring))


class RescoreScoring(LocalHub, Batch):
    """Scoring settings of a later step on a run folder: unset = the settings the run was started with."""

    presets = {"paper": PAPER_SCORING}

    preset: Literal["paper"] | None = setting(None, "Score as this preset (default: the run's preset).")
    scorer: str | None = setting(
        None, "Reference scorer (default: the run's); 'none' skips OL/UI/BUF/BC.", paper="App. B.2"
    )
    judge: str | None = setting(None, "Resolution judge (default: the run's); 'none' skips it.", paper="§5.2, App. D.1")
    grader: str | None = setting(None, "Open-ended equivalence grader (default: the run's); 'none': normalised match.")
    kl_direction: KLDirection | None = setting(
        None, "BUF's Delta_k direction (default: the run's).", paper="§4.2, App. B.2"
    )
    step_rule: StepRule | None = setting(None, "BUF step splitting (default: the run's).", paper="§4.2, App. B.2")
    bc_counting: BCCounting | None = setting(None, "BC cue counting (default: the run's).", paper="§4.2, App. B.2")
    plots: bool = setting(True, "Write PNG plots.")


# ---- PHRBench evaluation ----------------------------------------------------------------------------------------


class EvalPhrbenchConfig(Scoring, Calls, LocalHub):
    """`eval phrbench`: generate (cached, resumable) and score a model's responses to PHRBench."""

    command = ("eval", "phrbench")
    presets = {
        "paper": {
            "samples": PAPER_SAMPLES,
            "temperature": PAPER_TEMPERATURE,
            "max_tokens": "model",
            **PAPER_SCORING,
        },
    }

    model: str = setting(
        ..., "Model spec: local:smollm2, hf:ORG/NAME, openai:..., anthropic:..., google:..., vllm:...", paper="§4.1"
    )
    preset: Literal["paper"] | None = setting(
        None,
        "Named settings: 'paper' = 10 samples at temperature 0.7, the model's maximum output length, scorer "
        f"{PAPER_SCORER}; other settings given override it.",
        paper="App. B.1",
    )
    dataset: str = setting(
        DEFAULT_DATASET, "A built PHRBench folder, or a repo id ORG/NAME (--hub, $PHR_HUB_DIR, else the Hub)."
    )
    revision: str | None = setting(None, "Dataset revision (tag or commit) for a repo id.")
    samples: int = setting(PAPER_SAMPLES, "Samples per prompt.", paper="App. B.1", ge=1)
    temperature: Temperature = setting(PAPER_TEMPERATURE, "Sampling temperature (0 to 2).", paper="App. B.1")
    max_tokens: MaxTokens = setting(
        DEFAULT_MAX_TOKENS,
        "Maximum new tokens (at least 1); 'model': the model's maximum output length (the provider's, else the "
        "known-limits table phr/llm/model_limits.toml).",
        paper="App. B.1",
    )
    limit: int | None = setting(None, "Only the first N base questions (with all their conditions).", ge=1)
    shard: str | None = setting(None, "i/n: every n-th question starting at the i-th (join with `eval merge`).")
    conditions: str = setting("B,B+T,B+H", "Comma-separated conditions: B, B+T, B+H.", paper="§3")
    out: Path | None = setting(None, "Run folder (default: RUNS/<model>/<run id>).")
    runs: Path = setting(Path("runs"), "Root of run folders.")
    concurrency: int = setting(CONCURRENCY, "Concurrent API calls.", ge=1)
    score: bool = setting(True, "Score after generating (not for shards).")
    plots: bool = setting(True, "Write PNG plots.")


class EvalMergeConfig(RescoreScoring):
    """`eval merge`: join the shards of one run and score it with the settings the run was started with."""

    command = ("eval", "merge")
    arguments = ("shards",)

    shards: list[Path] = setting(..., "The run folders of shards 1..n.", metavar="SHARD_DIR")
    out: Path = setting(..., "The merged run folder.")
    score: bool = setting(True, "Score the merged run.")


class EvalScoreConfig(RescoreScoring):
    """`eval score`: (re)score a run folder; unset scoring settings are the run's own."""

    command = ("eval", "score")
    arguments = ("run",)

    run: Path = setting(..., "A run folder (unsharded or merged).", metavar="RUN_DIR")


class PartialResults(OpConfig):
    """Whether a result that scored only part of its dataset (docs/evaluation.md, "Coverage") is taken."""

    allow_partial: bool = setting(
        False,
        "Take a partial result (a --limit run, a submission with instances left out): it is recorded as allowed and "
        "shown marked partial and unranked; without it a partial result is refused (exit 2).",
    )


class Verification(OpConfig):
    """What results are re-derived against (docs/leaderboard.md, "Trust"): nothing a results file says is believed."""

    datasets: list[str] = setting(
        [],
        "PHRBench folders or repo ids to re-derive results against, matched by fingerprint (repeatable; default: a "
        "result's run folder, else the repo id and revision it names).",
        flag="--dataset",
        metavar="DATASET",
    )


class ScoreSubmissionConfig(Scoring, PartialResults, LocalHub, Batch):
    """`score`: validate and score a leaderboard submission (the runner's scoring code, docs/submissions.md)."""

    command = ("score",)
    arguments = ("submission",)
    presets = {"paper": PAPER_SCORING}

    submission: Path = setting(
        ...,
        "Submission JSONL ({instance_id, sample, response} per line), an lm-eval samples file or an inspect log.",
        metavar="SUBMISSION",
    )
    preset: Literal["paper"] | None = setting(
        None,
        f"Named settings: 'paper' = the reference scorer {PAPER_SCORER}; other settings given override it.",
        paper="App. B.2",
    )
    dataset: str = setting(
        DEFAULT_DATASET, "A built PHRBench folder, or a repo id ORG/NAME (--hub, $PHR_HUB_DIR, else the Hub)."
    )
    revision: str | None = setting(None, "Dataset revision (tag or commit) for a repo id.")
    meta: Path | None = setting(None, "Sidecar JSON (default: SUBMISSION.meta.json).")
    model: str | None = setting(None, "Model name (repo id); or in the sidecar JSON.", metavar="ORG/NAME")
    model_revision: str | None = setting(None, "Model revision (commit or tag).")
    link: str | None = setting(None, "http(s) link to the model or write-up.")
    samples: int | None = setting(None, "Declared samples per instance (default 1).", ge=1)
    conditions: str | None = setting(None, "Comma-separated conditions covered (default all).")
    submitted_by: str | None = setting(None, "Who submits.")
    notes: str | None = setting(None, "Free text shown with the result.")
    out: Path | None = setting(None, "Output folder (default: SUBMISSION.scored/).")
    plots: bool = setting(True, "Write PNG plots.")
    allow_weak_sandbox: bool = setting(
        False,
        "Run the submission's code even when the code sandbox is weak (rlimits only, or weaker than the best mode "
        "this machine has; refused otherwise); recorded in results.json (docs/sandbox.md).",
    )


class SubmitConfig(ScoreSubmissionConfig):
    """`submit`: validate, score and publish a submission to the leaderboard results repo."""

    command = ("submit",)

    repo: str = setting(..., "The leaderboard results repo, ORG/NAME (in --hub, else $PHR_HUB_DIR, else the Hub).")
    replace: bool = setting(False, "Overwrite a stored result with the same run id.")
    create_pr: bool = setting(
        False,
        "Without write access: open a pull request on the results repo holding the responses and metadata, for the "
        "maintainers' queue (leaderboard-queue) to score and merge.",
    )
    model_pr: bool = setting(False, "Also open a pull request on the model's repo adding .eval_results/phrbench.yaml.")


class PushResultsConfig(PartialResults, Verification):
    """`push-results`: add result JSONs to a leaderboard results repo and rebuild its leaderboard config."""

    command = ("push-results",)
    arguments = ("results",)

    results: list[Path] = setting(..., "Result JSON files (docs/publishing.md).", metavar="RESULT.json")
    repo: str = setting(..., "The results dataset repo, ORG/NAME.")
    eval_yaml: Path | None = setting(None, "The benchmark's eval.yaml (default: the repo's, else PHRBench's).")
    replace: bool = setting(False, "Overwrite a stored result with the same run id.")
    create_pr: bool = setting(False, "Open a pull request instead of committing to main.")
    message: str | None = setting(None, "Commit message.", alias_flag="-m")
    allow_weak_sandbox: bool = setting(
        False,
        "Take a result scored under a code sandbox weaker than bwrap / unshare (recorded, tagged on the card and "
        "page); refused otherwise.",
    )
    hub: Path | None = setting(None, HUB_DOC, metavar="HUBDIR")
    endpoint: str | None = setting(None, ENDPOINT_DOC)


class LeaderboardQueueConfig(Scoring, LocalHub):
    """`leaderboard-queue`: the maintainers' queue. For each open submission pull request of a results repo (opened
    by `submit --create-pr`): validate the submission, score it here, and merge it with its result and evidence,
    or close it with a comment stating every problem (docs/submissions.md, "The maintainers' queue")."""

    command = ("leaderboard-queue",)

    repo: str = setting(..., "The leaderboard results repo, ORG/NAME (in --hub, else $PHR_HUB_DIR, else the Hub).")
    dataset: str = setting(
        DEFAULT_DATASET, "The PHRBench the submissions are scored on: a built folder, or a repo id ORG/NAME."
    )
    revision: str | None = setting(None, "Dataset revision (tag or commit) for a repo id.")
    allow_weak_sandbox: bool = setting(
        False, "Score here even when the code sandbox is weak (the results are tagged 'weak sandbox')."
    )
    endpoint: str | None = setting(None, ENDPOINT_DOC)


class LeaderboardConfig(PartialResults, Verification):
    """`leaderboard`: render the leaderboard (parquet, Markdown, static HTML) from PHRBench results."""

    command = ("leaderboard",)
    arguments = ("sources",)

    sources: list[Path] = setting(
        [],
        "Result JSON files or folders (a runs folder, a pulled results repo); results of other benchmarks in a "
        "folder are skipped with a note.",
        metavar="SOURCE",
    )
    repo: str | None = setting(None, "Read the results repo ORG/NAME instead (local hub or the Hub).")
    hub: Path | None = setting(None, HUB_DOC, metavar="HUBDIR")
    out: Path = setting(Path("leaderboard"), "Where leaderboard.parquet/.md/.html go.")
    title: str = setting(LEADERBOARD_TITLE, "Page title.")
    space: str | None = setting(
        None,
        "Also publish the page as a static Space ORG/NAME (index.html, the result JSONs, a Space card) through the "
        "push gate: to the local hub (--hub, $PHR_HUB_DIR), else the Hub; unchanged results make no commit.",
        metavar="ORG/NAME",
    )
    space_license: str = setting("cc-by-4.0", "The Space card's license (a Hub license id).")


class LeaderboardVerifyConfig(Verification):
    """`leaderboard-verify`: re-derive every result of a results repo (or of files / folders) from its evidence and
    print result, claimed, recomputed and verdict (docs/leaderboard.md, "Trust")."""

    command = ("leaderboard-verify",)
    arguments = ("sources",)

    sources: list[Path] = setting(
        [], "Result JSON files or folders (a pulled results repo, a runs folder).", metavar="SOURCE"
    )
    repo: str | None = setting(None, "Check the results repo ORG/NAME instead (local hub or the Hub).")
    hub: Path | None = setting(None, HUB_DOC, metavar="HUBDIR")


class ReportConfig(PartialResults, Verification):
    """`report`: the paper's cross-model tables and figures, and the static leaderboard page
    (phr.leaderboard.report)."""

    command = ("report",)
    arguments = ("results",)

    results: list[Path] = setting(..., "Result JSON files or folders (runs, a pulled results repo).", metavar="RESULTS")
    out: Path = setting(Path("report"), "Where report.md/.json, figures/ and the page go.")
    access: list[str] = setting(
        [], "MODEL=proprietary|open, for results that do not say (repeatable).", metavar="MODEL=ACCESS"
    )
    title: str = setting(LEADERBOARD_TITLE, "Page title.")


# ---- Hallucination-R1 -------------------------------------------------------------------------------------------


class HR1QADecoding(OpConfig):
    """The QA model's decoding (App. A.3): builds, `eval hr1` and the stage-2 reward (``RewardConfig``)."""

    qa_max_tokens: int = setting(
        QA_MAX_TOKENS, "QA model max_tokens (greedy; the paper gives none).", paper="App. A.3", ge=1
    )


class HR1JudgeDecoding(OpConfig):
    """The B.2 / B.3 judges' reply cap: builds, `eval hr1` and the reward (``RewardConfig``)."""

    judge_max_tokens: int = setting(
        JUDGE_MAX_TOKENS, "Cap on each judge reply (Listings B.2, B.3).", paper="App. B", ge=1
    )


class HR1Decoding(HR1QADecoding, HR1JudgeDecoding):
    """Decoding of the Hallucination-R1 roles (App. A.3, Listing A.1; docs/hr1.md)."""

    max_tokens: int = setting(PARAPHRASE_MAX_TOKENS, "Paraphraser max_tokens (Listing A.1).", paper="App. A.3", ge=1)


class HR1Grading(OpConfig):
    """How a QA answer's B.3 grade counts (Eq. 10): `build hr1-paraphrases`, `eval hr1` and the stage-2 reward."""

    fuzzy: Fuzzy = setting(DEFAULT_FUZZY, "B.3 score 1 (fuzzy match) counts as: wrong or correct.", paper="Eq. 10")


#: the offline smoke plan: SmolLM2-135M rambles, so every reply is capped (docs/hr1.md, "Offline smoke corpus")
SMOKE_DECODING = {"max_tokens": 96, "qa_max_tokens": 24, "judge_max_tokens": 48}
#: Hallucination-R1-mini (docs/hr1.md): 16-token answers hold a tagged short answer; a paraphraser or judge under
#: test on the mini questions is capped as in the smoke plan
MINI_DECODING = {"max_tokens": 96, "qa_max_tokens": 16, "judge_max_tokens": 48}


class EvalHr1Config(HR1Decoding, HR1Grading, Calls):
    """`eval hr1`: evaluate a paraphraser against a QA model (Tables 1-3, or 4; 7 with more judges)."""

    command = ("eval", "hr1")
    presets = {"paper": {}, "smoke": {**SMOKE_DECODING, "k": HR1_MINI_K}, "mini": {**MINI_DECODING, "k": HR1_MINI_K}}

    preset: Literal["paper", "smoke", "mini"] | None = setting(
        None,
        "Named settings: 'paper' = the paper's decoding (Listing A.1); 'smoke' = K 4 and capped lengths "
        f"({SMOKE_DECODING}) for the offline model; 'mini' = Hallucination-R1-mini's 52 packaged questions with "
        f"the maintainers' curated paraphrases and labels (no paraphraser or judge unless given), K 4, "
        f"{MINI_DECODING}. The no-argument offline default runs 'mini'.",
    )
    dataset: EvalSets = setting(
        [],
        "Evaluation sets NAME=PATH (NAME alone with --online); default: Hallucination-R1-mini's questions. Repeatable.",
        metavar="NAME=PATH",
    )
    online: bool = setting(False, "Load sources given without a path from the Hub.")
    paraphraser: str = setting(OFFLINE_MODEL, "The paraphraser under test.", paper="§3")
    qa_model: str = setting(OFFLINE_MODEL, "The target QA model.", paper="§5.1")
    judge: str = setting(OFFLINE_MODEL, "Judge of Listings B.2 and B.3 (paper: DeepSeek-V3).", paper="§5.1, App. C.3")
    k: int | None = setting(
        None, f"Paraphrases per question (default {HR1_K}; --table 4: {HR1_TABLE4_K}).", paper="§5.1, App. E.3", ge=1
    )
    table: HR1Table = setting(DEFAULT_HR1_TABLE, "2 (Tables 1-3: robustness) or 4 (Table 4: SFT metrics).")
    judges: str | None = setting(None, "More consistency judges for Table 7 (comma-separated specs).", paper="Table 7")
    human: Path | None = setting(None, "Human consistency labels for Table 7 (question_id,k,annotator,label).")
    limit: int | None = setting(None, "At most N questions per source.", ge=1)
    diversity: bool = setting(True, "Compute Table 1's diversity (MiniLM).", paper="Table 1")
    out: Path = setting(
        Path("runs-hr1"), "Run folder (outside the PHRBench runs folder `runs/`, which `leaderboard runs` reads)."
    )
    overwrite: bool = setting(False, "Replace an existing output folder.")
    partial: bool = setting(
        False,
        "When calls fail after all retries, write the tables anyway, marked partial (the missing values left out of "
        "the denominators and listed); without it such a run writes nothing and exits 1.",
    )


class HR1Build(HR1Decoding, Calls):
    """What the Hallucination-R1 corpus builds share."""

    source: EvalSets = setting(
        [], "Sources NAME=PATH (NAME alone with --online loads the Hub copy). Repeatable.", metavar="NAME=PATH"
    )
    online: bool = setting(False, "Load sources given without a path from the Hub.")
    judge: str = setting(OFFLINE_MODEL, "Judge of Listings B.2 and B.3.", paper="§3.2")
    limit: int | None = setting(None, "At most N questions per source.", ge=1)
    out: Path | None = setting(None, "Output folder (Hub layout).")
    overwrite: bool = setting(False, "Replace an existing output folder.")


class HR1TrainingBuild(HR1Build):
    """The training corpora: SimpleQuestions train, screened against the evaluation sets."""

    stand_in_split: StandIn | None = setting(
        None, "Split one released split into train and test (even-train-odd-test); the card says so."
    )
    eval_set: EvalSets = setting(
        [],
        "Evaluation sets NAME=PATH the corpus must not overlap (NAME=stand-in: the other half). Repeatable.",
        paper="App. C.1",
        metavar="NAME=PATH",
    )
    drop_leaking: bool = setting(False, "Leave out overlapping training rows (listed) instead of failing.")


class BuildHr1ParaphrasesConfig(HR1Build, HR1Grading):
    """`build hr1-paraphrases`: a paraphrase corpus (no arguments: Hallucination-R1-mini, preset mini)."""

    command = ("build", "hr1-paraphrases")
    presets = {
        "paper": {},
        "smoke": {**SMOKE_DECODING, "k": HR1_MINI_K, "limit": 24},
        "mini": {"k": HR1_MINI_K, "qa_max_tokens": MINI_DECODING["qa_max_tokens"]},
    }

    preset: Literal["paper", "smoke", "mini"] | None = setting(
        None,
        "Named settings: 'smoke' = 24 questions, K 4, capped lengths (a paraphraser given without --source); "
        "'mini' = Hallucination-R1-mini: 52 packaged questions, the maintainers' curated paraphrases and labels, "
        "the QA model's 16-token answers graded by alias match, no judge (the no-argument offline default).",
    )
    paraphraser: str = setting(OFFLINE_MODEL, "Paraphrase model (Listing B.1).", paper="App. B.1")
    qa_model: str = setting(OFFLINE_MODEL, "QA model (Listing B.4); 'none' skips QA.", paper="App. B.4")
    k: int = setting(HR1_K, "Paraphrases per question.", paper="§5.1", ge=1)
    diversity: bool = setting(True, "Compute the diversity scores (MiniLM).")


def _training_preset() -> Any:
    """The ``preset`` setting of the two training corpora (`build hr1-sft`, `build hr1-grpo`)."""
    return setting(
        None,
        "Named settings: 'smoke' = capped lengths; 'mini' = the offline smoke corpus from Hallucination-R1-mini's "
        "stand-in train rows, no model run (the no-argument default).",
    )


class BuildHr1SftConfig(HR1TrainingBuild):
    """`build hr1-sft`: consistent paraphrases of SimpleQuestions train with the gold answer (App. E.1)."""

    command = ("build", "hr1-sft")
    presets = {"paper": {}, "smoke": {**SMOKE_DECODING}, "mini": {}}

    preset: Literal["paper", "smoke", "mini"] | None = _training_preset()
    paraphraser: str = setting(OFFLINE_MODEL, "Paraphrase model (Hallucination-R1).", paper="App. E.1")
    k: int = setting(HR1_SFT_K, "Paraphrases per question.", paper="App. E.1", ge=1)


class BuildHr1GrpoConfig(HR1TrainingBuild):
    """`build hr1-grpo`: SimpleQuestions train questions the QA model answers correctly (App. C.1)."""

    command = ("build", "hr1-grpo")
    presets = {"paper": {}, "smoke": {**SMOKE_DECODING}, "mini": {}}

    preset: Literal["paper", "smoke", "mini"] | None = _training_preset()
    qa_model: str = setting(
        OFFLINE_MODEL, "The QA model whose correct answers are kept (paper: Qwen2.5-3B).", paper="App. C.1"
    )


# ---- PHRBench build ---------------------------------------------------------------------------------------------


class BuildPhrbenchConfig(Calls):
    """`build phrbench`: build PHRBench (default: PHRBench-mini offline) into a validated Hub-layout folder."""

    command = ("build", "phrbench")

    recipe: str = setting("mini", "mini (offline, curated premises), paper, or a recipe YAML file.", paper="§3")
    out: Path = setting(Path("phrbench"), "Output folder (Hub layout).")
    generator: str | None = setting(
        None, f"Premise generator spec (default: the recipe's, else {DEFAULT_GENERATOR}).", paper="App. A.2"
    )
    judge: str | None = setting(
        None,
        "LLM judge for the second validation pass ('none' skips it; paper: google:gemini-3-pro-preview).",
        paper="App. A.2",
    )
    source_dir: Path | None = setting(None, "Folder with one sub-folder of released files per source.")
    online: bool = setting(False, "Load sources missing locally from the Hub.")
    overwrite: bool = setting(False, "Replace an existing output folder.")
    allow_short: bool = setting(False, "Build even if some questions lack premises.")
    prompts: str = setting(
        "paper",
        "Generation prompts: paper (A.2, verbatim), v0 (the toolkit's earlier prompts), or a folder with "
        "prompt_t.txt and prompt_h.txt.",
        paper="App. A.2",
    )
    allow_stand_in: bool = setting(
        False, "Build with the offline B3DB stand-in when no MoleculeNet BBBP copy is found (the card says so)."
    )
    skip_review: bool = setting(
        False,
        "QC fast path: rule checks and LLM judge during generation, no manual review before push (recorded in "
        "manifest.json and on the card). Default: the paper's order (rule checks -> manual review -> judge; "
        "docs/review.md).",
        paper="App. A.2",
    )


# ---- validation and review ----------------------------------------------------------------------------------


class ValidateConfig(OpConfig):
    """`validate`: every check of a built folder, by its artifact kind (exit 0 when all pass, 1 otherwise)."""

    command = ("validate",)
    arguments = ("folder",)
    keeps_freed_memory = True

    folder: Path = setting(..., "A built PHRBench folder or Hallucination-R1 corpus.", metavar="FOLDER")
    eval_set: EvalSets = setting(
        [],
        "Hallucination-R1 training corpora: also check split leakage against this evaluation set (a "
        "Hallucination-R1 evaluation source NAME, released files at PATH). Repeatable.",
        paper="App. C.1",
        metavar="NAME=PATH",
    )
    as_json: bool = setting(False, "Print the report as JSON.", flag="--json")


class ReviewExportConfig(OpConfig):
    """`review export`: a CSV review sheet (one row per premise) and a readable HTML page of the same premises."""

    command = ("review", "export")
    arguments = ("folder",)

    folder: Path = setting(..., "A built PHRBench folder.", metavar="FOLDER")
    out: Path = setting(Path("review.csv"), "The CSV review sheet to write (the HTML page goes next to it).")
    include_baseline: bool = setting(False, "Also list the baseline rows (context only).")


class ReviewImportConfig(OpConfig):
    """`review import`: check a filled review sheet and merge its decisions into <folder>/review/decisions.json."""

    command = ("review", "import")
    arguments = ("sheet",)

    sheet: Path = setting(..., "The filled CSV review sheet.", metavar="SHEET")
    folder: Path = setting(..., "The PHRBench folder the sheet was exported from (its review/ is updated).")
    reviewer: str | None = setting(None, "Reviewer name for decided rows whose reviewer cell is blank.")


# ---- publishing --------------------------------------------------------------------------------------------------


class PushConfig(OpConfig):
    """`push`: validate a folder, then push it to the Hub or a local hub as one commit (docs/publishing.md)."""

    command = ("push",)
    arguments = ("folder",)
    keeps_freed_memory = True

    folder: Path = setting(..., "The folder to publish (a built PHRBench folder, a checkpoint, ...).", metavar="FOLDER")
    repo: str = setting(..., "The repo, ORG/NAME.", metavar="ORG/NAME")
    repo_type: RepoType = setting("dataset", "dataset, model or space.")
    tag: str | None = setting(
        None, "Create this tag (e.g. v0.1.0) on the pushed commit; an existing tag is never moved."
    )
    private: bool = setting(False, "Create the repo private (Hub only).")
    create_pr: bool = setting(False, "Open a pull request instead of committing to main.")
    message: str | None = setting(
        None, "Commit message (default: one naming the folder, kind and tag).", alias_flag="-m"
    )
    hub: Path | None = setting(None, HUB_DOC, metavar="HUBDIR")
    endpoint: str | None = setting(None, ENDPOINT_DOC)
    allow_unreviewed: bool = setting(
        False,
        "Push a PHRBench build whose recipe requires a manual review (paper) with premises not yet reviewed.",
    )


class PullConfig(OpConfig):
    """`pull`: download a repo at a revision into a folder."""

    command = ("pull",)
    arguments = ("repo",)

    repo: str = setting(..., "The repo to download.", metavar="ORG/NAME")
    repo_type: RepoType = setting("dataset", "dataset, model or space.")
    revision: str | None = setting(None, "Tag, branch (main, pr/1) or commit (default: main).")
    out: Path | None = setting(None, "Destination folder (default: ./NAME).")
    hub: Path | None = setting(None, HUB_DOC, metavar="HUBDIR")
    overwrite: bool = setting(False, "Replace a non-empty destination.")
    endpoint: str | None = setting(None, ENDPOINT_DOC)


class RepairConfig(OpConfig):
    """`repair`: restore a damaged local hub repo (its current version missing, main broken) from its last push."""

    command = ("repair",)
    arguments = ("repo",)

    repo: str = setting(..., "The local hub repo to repair, ORG/NAME.", metavar="ORG/NAME")
    repo_type: RepoType = setting("dataset", "dataset, model or space.")
    hub: Path | None = setting(None, "Local hub folder (default: $PHR_HUB_DIR).", metavar="HUBDIR")


# ---- training (the recipe YAML is the config of its own sections; these are the command's settings) ----------


class TrainConfig(OpConfig):
    """What `train grpo` / `train sft` take besides the recipe's sections (docs/training.md)."""

    recipe: str = setting(
        ...,
        "A recipe YAML, or a packaged recipe name (e.g. paper-qwen2.5-3b-stage1, tiny-stage1, tiny-sft).",
        flag="--config",
        metavar="FILE",
    )
    resume: bool = setting(False, "Continue from the last checkpoint-N of the output folder.")
    data: Path | None = setting(None, "Corpus folder (overrides data.path).")
    output_dir: Path | None = setting(None, "Run folder (overrides trainer.output_dir).")
    max_steps: int | None = setting(None, "Overrides trainer.max_steps.", ge=1)
    eval_set: EvalSets = setting(
        [],
        "Evaluation sets NAME=PATH the corpus must not overlap: its training rows are screened for split leakage "
        "before training (and by --dry-run); default: the screen its build recorded in manifest.json. Repeatable.",
        paper="App. C.1",
        metavar="NAME=PATH",
    )
    set: list[str] = setting(
        [], "Override one recipe value (VALUE read as YAML). Repeatable.", metavar="SECTION.KEY=VALUE"
    )


class TrainGrpoConfig(TrainConfig):
    """`train grpo`: one GRPO stage of a recipe (R_stab, then R_train; §3.2)."""

    command = ("train", "grpo")
    stage: int | None = setting(
        None, "1 (R_stab) or 2 (R_train); default: the recipe's stage.", paper="§3.2", ge=1, le=2
    )
    init_from: Path | None = setting(None, "Stage 2: the stage-1 checkpoint (model.init_from).", paper="§3.2")


class TrainSftConfig(TrainConfig):
    """`train sft`: (LoRA) SFT on an hr1-sft corpus (App. E.1)."""

    command = ("train", "sft")
    merge: bool | None = setting(None, "Also write merged/ (LoRA merged into a full model); default: lora.merge.")


# ---- analyses ---------------------------------------------------------------------------------------------------


class PredictorFit(OpConfig):
    """How the insightful-trajectory predictor is fitted and validated: every choice PHRBench's Appendix E would
    have fixed (docs/analyses.md). Recorded in predictor.json (``settings``)."""

    target: Literal["pooled", "per_model"] = setting("pooled", "pooled (one row per prompt) or per_model.")
    threshold: float = setting(0.5, "Positive: insightful propensity > this.", paper="§5.3", ge=0.0, lt=1.0)
    folds: int = setting(5, "Cross-validation folds, grouped by base question.", ge=2)
    seed: int = setting(0, "Seed of the folds, the bootstrap and XGBoost.", ge=0, lt=2**32)
    resamples: int = setting(1000, "Bootstrap draws of the base questions.", ge=2)
    confidence: float = setting(0.95, "Confidence of the bootstrap's percentile intervals.", gt=0.0, lt=1.0)
    n_estimators: int = setting(200, "XGBoost: boosting rounds.", ge=1)
    max_depth: int = setting(3, "XGBoost: maximum tree depth.", ge=1)
    learning_rate: float = setting(0.05, "XGBoost: learning rate.", gt=0.0)
    subsample: float = setting(0.8, "XGBoost: share of the rows each tree sees.", gt=0.0, le=1.0)
    colsample_bytree: float = setting(0.8, "XGBoost: share of the features each tree sees.", gt=0.0, le=1.0)

    def xgb_params(self) -> dict:
        """Keyword arguments of ``xgboost.XGBRegressor``."""
        return {
            "n_estimators": self.n_estimators,
            "max_depth": self.max_depth,
            "learning_rate": self.learning_rate,
            "subsample": self.subsample,
            "colsample_bytree": self.colsample_bytree,
            "random_state": self.seed,
            "n_jobs": 1,
            "tree_method": "hist",
        }


class AnalyzePredictorConfig(PredictorFit, Batch):
    """`analyze predictor`: which prompt features predict insightful resolution (PHRBench §5.3)."""

    command = ("analyze", "predictor")

    results: list[Path] = setting(
        [], "results.json files (with their samples.jsonl); more may follow as arguments.", metavar="FILE"
    )
    dataset: str = setting(..., "The PHRBench dataset the results were scored on.")
    judge: str = setting("openai:gpt-4o", "LLM for the 12 semantic features; 'none' leaves them missing.", paper="§5.3")
    out: Path = setting(Path("analysis/predictor"), "Output folder (replaced).")


class AnalyzeParaphrasesConfig(OpConfig):
    """`analyze paraphrases`: why paraphrases fail (Hallucination-R1 §6, Eq. 11-18, RF vs RP)."""

    command = ("analyze", "paraphrases")

    corpus: Path = setting(..., "An hr1-paraphrases corpus folder.", metavar="DIR")
    model: str = setting(..., "The in-process model for hidden states (hf:..., local:...).")
    layer: int | None = setting(
        None, "hidden_states index for d_Q / d_QA (0 = embeddings; default: half the blocks).", ge=0
    )
    out: Path = setting(Path("hr1-diagnostics"), "Output folder.", metavar="DIR")
    normalize: Literal["l2", "none"] = setting("l2", "Embeddings before the L2 distance: l2 (normalised) or none.")
    final_norm: bool = setting(True, "Logit lens: apply the model's final norm.", paper="Eq. 16")
    cases: int = setting(4, "RF cases in the logit-lens heat map.", ge=1)
    batch_size: int = setting(8, "Batch size of the forward passes.", ge=1)
    overwrite: bool = setting(False, "Replace an existing output folder.")


# ---- the LLM layer ------------------------------------------------------------------------------------------------


class LlmPingConfig(OpConfig):
    """`llm ping`: send one prompt to a model and print the reply and the usage."""

    command = ("llm", "ping")
    arguments = ("spec",)

    spec: str = setting(..., "Model spec, e.g. local:smollm2, openai:gpt-4o, anthropic:<model>.", metavar="SPEC")
    prompt: str = setting("What is the capital of France? Answer in one sentence.", "The prompt to send.")
    max_tokens: int = setting(64, "Maximum new tokens.", ge=1)
    temperature: Temperature = setting(0.0, "Sampling temperature (0 = greedy, up to 2).")
    cache_mode: Literal["use", "refresh", "off"] = setting("use", "use | refresh | off")
    timeout: float = setting(60.0, "Per-call timeout in seconds (API models).", gt=0)
    attempts: int = setting(3, "Attempts before giving up (retries back off exponentially).", ge=1)
    max_retry_after: float = setting(
        MAX_RETRY_AFTER_S,
        "Longest Retry-After (seconds) a rate-limited call waits; a server asking for more fails the call at once.",
        ge=0,
    )


class CacheStatsConfig(OpConfig):
    """`cache stats`: entries, failures, size and tokens per model in the call cache."""

    command = ("cache", "stats")

    as_json: bool = setting(False, "Print JSON.", flag="--json")


class CacheClearConfig(OpConfig):
    """`cache clear`: delete cached calls (all, or one model's)."""

    command = ("cache", "clear")

    model: str | None = setting(None, "Only this model's entries.")
    yes: bool = setting(False, "Do not ask.", alias_flag="-y")


#: every operation's config, in the order of the reference docs
OPERATIONS: tuple[type[OpConfig], ...] = (
    BuildPhrbenchConfig,
    BuildHr1ParaphrasesConfig,
    BuildHr1SftConfig,
    BuildHr1GrpoConfig,
    EvalPhrbenchConfig,
    EvalMergeConfig,
    EvalScoreConfig,
    ScoreSubmissionConfig,
    SubmitConfig,
    PushResultsConfig,
    LeaderboardConfig,
    LeaderboardVerifyConfig,
    LeaderboardQueueConfig,
    EvalHr1Config,
    TrainGrpoConfig,
    TrainSftConfig,
    AnalyzePredictorConfig,
    AnalyzeParaphrasesConfig,
    ValidateConfig,
    ReviewExportConfig,
    ReviewImportConfig,
    LlmPingConfig,
    CacheStatsConfig,
    CacheClearConfig,
    PushConfig,
    PullConfig,
    RepairConfig,
    ReportConfig,
)
