"""One screen per mode (Runs, Train, Ledger, Traces, Analysis, Submit) plus dialogs."""
