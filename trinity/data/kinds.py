"""The kinds of question, each naming the grader that decides it (trinity.grading.grade).

Kept in a module with no imports: the grading package reads it, and grading must import in a
bare interpreter (the sandbox tests run it as an ordinary user without numpy).
"""

KINDS = ("math", "mc", "code", "exact", "ifeval", "funcall")

# Kinds whose answer carries no marker a Thinker's plan would lack (no \boxed{}, no option
# letter, no code block): only a Worker turn is taken as the answer.
WORKER_ANSWER_KINDS = ("exact", "ifeval", "funcall")
