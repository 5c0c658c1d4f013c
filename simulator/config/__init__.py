"""The file formats users write: scenarios, suites, criteria; validation with file/line/field errors."""
