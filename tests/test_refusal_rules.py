"""Every refusal of ours that cuda.core 1.2.2 does not make, among the edge inputs of the options
and CPU-call matrices, and the rule of docs/migrating.rst that names the harm it prevents (issue
27, part 1: "list them all ... keep it, with docs/migrating.rst saying which crash, garbage or
hang it prevents, or drop it").

Each refusal is matched to one of ``RULES``: the section of docs/migrating.rst that states the
rule, and what ours raises there. A refusal no rule matches is listed by
``test_no_more_unexplained_refusals_than_recorded``, whose bound ``MOST_UNEXPLAINED`` only
goes down: explain a refusal in docs/migrating.rst and add its rule here, or drop the refusal.
The GPU calls' refusals go to a report instead (tests/test_differential_gpu_calls.py).
"""

import collections
import dataclasses
import re

import pytest

from helpers.differential import migrating_sections, require_reference

require_reference("1.2.2")

import test_differential_calls as calls  # noqa: E402
import test_differential_options as options  # noqa: E402

FLOATS = {"1.5", "np.float32(2)"}
FLAGS = "Flags, integers and list options"
COMPILERS = r"^(ProgramOptions|LinkerOptions)\."


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str
    section: str  # of docs/migrating.rst
    message: str = ""  # a regular expression our message must match (search)
    case: str = ""  # ... and the case's label
    inputs: frozenset = frozenset()  # ... and the input, where given
    error: str = ""  # ... and the name of one of our exception's classes

    def matches(self, case, input_name, exc):
        names = {c.__name__ for c in type(exc).__mro__}
        return ((not self.message or re.search(self.message, str(exc)))
                and (not self.case or re.search(self.case, case))
                and (not self.inputs or input_name in self.inputs)
                and (not self.error or self.error in names))


RULES = [
    Rule("a flag given a float, a container or a str that spells false", FLAGS,
         message=r"must be a bool( or None)?, not |spells false|a non-empty str is true"),
    Rule("a float where an int is taken", FLAGS, message=r"not (numpy\.)?float(32)?\b",
         inputs=frozenset(FLOATS)),
    Rule("NumPy's bool where an int is taken", FLAGS, message=r"not numpy\.bool",
         inputs=frozenset({"np.True_"})),
    Rule("a value NVRTC or nvJitLink refuses, refused when the options are made",
         "Smaller differences", error="CompilerOptionError"),
    Rule("a str, path or int option of the compilers given another type", FLAGS,
         case=COMPILERS, message=r"must be (a str( or path-like)?( \(or a list of them\))?|"
                                 r"a str or int|an int or None|a sequence of \(name, source\) "
                                 r"pairs), not"),
    Rule("a launch configuration that can never launch", "Launch configuration",
         case=r"^LaunchConfig"),
    Rule("an ObjectCode of no file, an empty path or another type", "Compilation and the "
         "program cache", case=r"^ObjectCode\.from_"),
    Rule("FileStreamProgramCache('')", "Compilation and the program cache",
         case=r"^FileStreamProgramCache", message="path must not be empty"),
    Rule("array and texture options checked when made", "Textures and surfaces",
         case=r"^(TextureObjectOptions|OpaqueArrayOptions|MipmappedArrayOptions)\."),
    Rule("an options value cuda.core takes and refuses when the options are used",
         "Smaller differences", case=r"^\w+Options\.",
         message=r"must be one of .*, (not|got) |must be an int( or None)?, not (str|tuple|"
                 r"list|bytes|NoneType)|does not fit in \d+ bits|must be >= -?\d+, got|"
                 r"must be between -?\d+ and \d+, got|must be a power of two"),
    Rule("an options field cuda.core checks only where it uses it, or reads as device ordinals",
         "Smaller differences",
         case=r"^(ContextOptions\.resources|CopyOptions\.(src|dst)_location_hint|"
              r"SMResourceOptions\.\w+|TensorMapDescriptorOptions\.\w+|"
              r"VirtualMemoryResourceOptions\.peers)$",
         message=r"must be an SMResource or a WorkqueueResource, not|must be a Device, a Host "
                 r"or None, not|entries, but count asks for|must not be an empty sequence|"
                 r"must be a tuple of ints, not|must have 1 to 5 entries|entries but box_dim "
                 r"has|has no tensor-map type|must be an iterable of devices"),
    Rule("Stream.from_handle asks the driver for the stream's context at once",
         "Smaller differences", case=r"^Stream\.from_handle", error="DriverNotFoundError"),
    Rule("Stream.from_handle of an address in the first page", "Smaller differences",
         case=r"^Stream\.from_handle", message="is not a stream"),
    Rule("make_program_cache_key(name_expressions=str)", "Compilation and the program cache",
         case=r"^make_program_cache_key\(name_expressions", message="not str"),
    Rule("make_program_cache_key(extra_digest=) of another type than bytes",
         "Compilation and the program cache", case=r"^make_program_cache_key\(extra_digest",
         message="extra_digest must be bytes or None"),
    Rule("Buffer.from_handle(0, size) with a size", "Smaller differences",
         case=r"^Buffer\.from_handle", message=r"\(NULL\) but size"),
]


def refusals():
    """[(case, input, our exception)] where cuda.core 1.2.2 takes the input and ours refuses."""
    out = []
    for module, name, field in options.CASES:
        for label, value in options.EDGES.items():
            _, theirs, _ = options.make("cuda.core", module, name, field, value)
            _, ours, _ = options.make("cuda_core", module, name, field, value)
            if theirs is None and ours is not None:
                out.append((f"{name}.{field}", label, ours))
    for label, call in calls.CALLS:
        for name, x in calls.EDGES.items():
            _, theirs, _ = calls.outcome("cuda.core", call, x)
            _, ours, _ = calls.outcome("cuda_core", call, x)
            if theirs is None and ours is not None:
                out.append((label, name, ours))
    return out


@pytest.fixture(scope="module")
def classified():
    by_rule, unexplained = collections.Counter(), []
    for case, input_name, exc in refusals():
        rule = next((r for r in RULES if r.matches(case, input_name, exc)), None)
        if rule is None:
            unexplained.append(f"{case} <- {input_name}: {type(exc).__name__}: {exc}")
        else:
            by_rule[rule.name] += 1
    return by_rule, unexplained


def test_each_rule_names_a_section_of_the_migration_guide():
    sections = migrating_sections()
    assert {r.section for r in RULES} <= sections, {r.section for r in RULES} - sections


def test_each_rule_explains_some_refusal(classified):
    by_rule, _ = classified
    assert {r.name for r in RULES} == set(by_rule), {r.name for r in RULES} - set(by_rule)


MOST_UNEXPLAINED = 0  # see the module's docstring


def test_no_more_unexplained_refusals_than_recorded(classified, capsys):
    by_rule, unexplained = classified
    with capsys.disabled():
        print(f"\nrefusals cuda.core 1.2.2 does not make: {sum(by_rule.values())} explained by "
              f"{len(RULES)} rules, {len(unexplained)} not yet")
    assert len(unexplained) <= MOST_UNEXPLAINED, "\n".join(unexplained)
