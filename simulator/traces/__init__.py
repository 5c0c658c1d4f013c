"""Real conversations: import production traces and transcripts into ordinary run folders, draft scenarios
from them, and export runs as OpenTelemetry GenAI spans. Importers are writers, like the engine."""
