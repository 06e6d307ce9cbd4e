//! Result tables (placeholder).
