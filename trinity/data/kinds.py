"""The kinds of question, each naming the grader that decides it (trinity.grading.grade).

Kept in a module with no imports: the grading package reads it, and grading must import in a
bare interpreter (the sandbox tests run it as an ordinary user without numpy).
"""

KINDS = ("math", "mc", "code", "exact", "ifeval", "funcall")
