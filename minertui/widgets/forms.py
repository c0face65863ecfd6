"""Form controls that behave in a form: a focused checkbox takes the typed characters (they do
nothing) instead of letting them fire the mode's and the app's one-letter keys, and shows an
empty box, not a dim "X", when it is off. Esc leaves the form (ModeScreen's binding)."""

from __future__ import annotations

from textual.widgets import Checkbox


class FormCheckbox(Checkbox):
    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]
        return "✓" if self.value else " "

    def check_consume_key(self, key: str, character: str | None) -> bool:
        # printable keys stay here (space and Enter toggle); Esc, Tab and ctrl+keys go on
        return character is not None and character.isprintable()
