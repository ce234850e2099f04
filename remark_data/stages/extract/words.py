"""Word lists the gazetteer's evidence rules use: general English, not tuned to any title."""

from __future__ import annotations

#: Words that are also titles; alone they need evidence (quotes, a year, a list line).
COMMON_WORDS = frozenset(
    """a about after again all always an and any as at away back bad be because before being
    best better big black blue body boy boys but by can change children city come cold
    crash dark day days dead do down drive eden end enough even every everything face fall
    family far fear fight find fire for found free friends from game gate get girl go god
    gone good great had happy hard have he heat her here him his home hope hot house how i
    if in inside into is it its just kids last let life light like little live long look
    lost love made man many me men mine more most mother my need never new next night no
    not nothing now of off old on once one only or other our out over people play red right
    room run said say see seven she sin so some something soul speed split still stop such
    sun take taken than that the their them then there these they thing things this those
    time to too true trust two under up us very war was water way we well what when where
    which while white who why will with without woman women work world year yes yesterday
    you young your""".split()  # noqa: SIM905
) | frozenset(
    # Everyday English a comment uses in prose (not in any list above): with these, "a true
    # story", "normal people", "thank you", "a long shot", "I am" need the same evidence.
    """am are were been has does did done story stories people person normal thank thanks
    please shot guy guys first second third mood english language amazon netflix hulu prime
    disney hbo oscar oscars award awards remake reboot sequel season series episode post
    amazing masterpiece perfect hell heaven directors director cut edition version original
    kid dad mom son daughter brother sister friend school car road movie movies film films
    show shows watch watched seen music song book part ending word words wife husband baby
    party dream dreams lady king queen prince princess earth space moon star stars sea island
    town country america american alone together forever tonight today tomorrow summer winter
    christmas birthday wedding money power truth secret secrets ghost monster hero legend
    tale journey mission killer kill die alive human animal dog cat beautiful wonderful funny
    crazy wild strange weird sweet nice kind simple easy real whole full open lucky sad angry
    brave quiet fast slow high low deep short rich poor broken missing hidden chosen behind
    beyond between across around through anything someone nobody everybody somebody else
    anywhere nowhere somewhere everywhere ever sometimes often maybe perhaps actually also
    almost already yet much less few both each either same different another own worst worse
    greatest top middle side front door window wall street fun problem question answer
    reason idea plan type sort style level team club job business system control order law
    act action scene genre comedy drama horror thriller romance true super""".split()  # noqa: SIM905
)

FUNCTION_WORDS = frozenset(
    """a an the i me my we us our you your he him his she her it its they them their this that
    up down in out on off over so no not yes go do be is am are was one all more really too
    just very here there then now what who how why when where""".split()  # noqa: SIM905
)
