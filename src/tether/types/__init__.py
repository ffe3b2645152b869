"""The small frozen data types every stage shares.

Defined once here and imported everywhere else; a stage never defines its own copy.
They carry data only: no I/O, no model calls. Dates are `datetime.date`; text offsets are
character offsets into `Document.text` (the parsed text of one document).

Every name is importable from `tether.types`; the classes live in one module per concern:
`documents` (DocMeta, Document, Block, Chunk, DocumentInfo, Filters, Hit), `sync` (what an
ingest cuts and writes: ChunkerConfig, SyncReport, the ChangeSet), `model_io` (ModelRequest,
Completion, Capabilities), `questions` (Question, Relevant), `checks` (Claim, Evidence, Detail,
Flag, ClaimCheck), `answers` (Context, Gate, Answerability, Answer, AgentTrace, AskResult),
`audit` (AuditEntry, Feedback, AuditQuery) and `health` (Quote, Contradiction, Finding,
HealthReport).

What it cannot do: these describe data, they do not validate it (that is `tether.schemas`'s
job at the edges, for what comes in as JSON); the JSON shapes a consumer reads are the wire
models of `tether.schemas`, built from these.
"""

from tether.types.answers import (
    AgentStep,
    AgentTrace,
    Answer,
    Answerability,
    AnswerProblem,
    AnswerProblemKind,
    AskResult,
    AskStatus,
    Context,
    Dropped,
    Gate,
    Passage,
    RefusedBy,
)
from tether.types.audit import AuditEntry, AuditQuery, Feedback, FeedbackVerdict
from tether.types.checks import Claim, ClaimCheck, Detail, Evidence, Flag
from tether.types.documents import (
    Access,
    Audience,
    Block,
    BlockKind,
    Chunk,
    DocMeta,
    Document,
    DocumentInfo,
    FileFormat,
    Filters,
    Hit,
    InstructionSpan,
)
from tether.types.health import Contradiction, Finding, HealthKind, HealthReport, Quote
from tether.types.model_io import AnswerMode, Capabilities, Completion, Message, ModelRequest
from tether.types.questions import Question, Relevant
from tether.types.sync import (
    ChangeSet,
    ChunkerConfig,
    FileChange,
    FileProblem,
    FileState,
    Progress,
    SentenceVectorChange,
    SyncReport,
    TokenWindow,
    VectorChange,
)

__all__ = [
    "Access",
    "AgentStep",
    "AgentTrace",
    "Answer",
    "AnswerMode",
    "AnswerProblem",
    "AnswerProblemKind",
    "Answerability",
    "AskResult",
    "AskStatus",
    "Audience",
    "AuditEntry",
    "AuditQuery",
    "Block",
    "BlockKind",
    "Capabilities",
    "ChangeSet",
    "Chunk",
    "ChunkerConfig",
    "Claim",
    "ClaimCheck",
    "Completion",
    "Context",
    "Contradiction",
    "Detail",
    "DocMeta",
    "Document",
    "DocumentInfo",
    "Dropped",
    "Evidence",
    "Feedback",
    "FeedbackVerdict",
    "FileChange",
    "FileFormat",
    "FileProblem",
    "FileState",
    "Filters",
    "Finding",
    "Flag",
    "Gate",
    "HealthKind",
    "HealthReport",
    "Hit",
    "InstructionSpan",
    "Message",
    "ModelRequest",
    "Passage",
    "Progress",
    "Question",
    "Quote",
    "RefusedBy",
    "Relevant",
    "SentenceVectorChange",
    "SyncReport",
    "TokenWindow",
    "VectorChange",
]
