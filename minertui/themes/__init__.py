"""The shipped theme files (TOML), package data so that a non-editable install finds them;
`themes/` at the repository root links here."""
