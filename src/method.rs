//! method
