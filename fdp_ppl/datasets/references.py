"""Public reference curves (published values, not derived from any dataset in the package).

Subtracting a public reference before clipping is post-processing-neutral and
data-independent: the release is of the deviations, and the reference is
added back afterwards.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the command line lists these constants without importing numpy
    import numpy as np

#: Median height (cm) at whole years of age 1..18, (boys, girls), from the CDC 2000 growth charts
#: (Kuczmarski et al. 2002): age 1 from the infant length-for-age table (lenageinf, 12 months),
#: ages 2..18 from the stature-for-age table (statage, LMS parameter M at 12·age months, the mean of the
#: two half-month rows around it). Published reference values: public knowledge, not derived from any
#: private data; rounded to 0.1 cm.
CDC2000_MEDIAN_HEIGHT_CM = {
    1: (75.5, 73.8), 2: (86.5, 85.0), 3: (95.0, 93.9), 4: (102.2, 100.8), 5: (108.9, 107.7),
    6: (115.4, 114.7), 7: (121.8, 121.5), 8: (127.9, 127.6), 9: (133.5, 132.9), 10: (138.6, 138.0),
    11: (143.5, 144.0), 12: (149.1, 151.2), 13: (156.1, 157.2), 14: (163.8, 160.4), 15: (169.9, 161.9),
    16: (173.5, 162.5), 17: (175.3, 162.9), 18: (176.2, 163.1),
}
GROWTH_REFERENCE_SOURCE = ("CDC 2000 growth charts, median length/stature-for-age, unweighted average of "
                           "boys and girls, linear between whole years")
#: Public clipping bound for deviations from that reference (cm): at every age 1..18 the CDC coefficient of
#: variation S is at most 0.051, so 4 reference SDs are at most 4 × 0.051 × 164 ≈ 33.5 cm, and the
#: boy/girl median gap adds at most 6.6 cm to the distance from the sex-averaged median; 40 cm covers both
#: at every age, hence also the L² norm over ages. Clipping enforces it whatever the data.
GROWTH_DEVIATION_TAU = 40.0
#: The naive public bound on raw heights: under 200 cm at every age ⇒ L² norm on [0, 1] at most 200.
GROWTH_RAW_TAU = 200.0


def growth_reference(ages) -> "np.ndarray":
    """Public reference height (cm) at ``ages`` (years, within [1, 18]); see
    :data:`CDC2000_MEDIAN_HEIGHT_CM`."""
    import numpy as np  # here, not at import: the command line lists these constants without numpy

    a = np.asarray(sorted(CDC2000_MEDIAN_HEIGHT_CM), dtype=float)
    m = np.array([np.mean(CDC2000_MEDIAN_HEIGHT_CM[int(k)]) for k in a])
    ages = np.asarray(ages, dtype=float)
    if ages.min() < a[0] - 1e-9 or ages.max() > a[-1] + 1e-9:
        raise ValueError(f"the growth reference covers ages {a[0]:g}..{a[-1]:g} years only")
    return np.interp(ages, a, m)



__all__ = ["CDC2000_MEDIAN_HEIGHT_CM", "GROWTH_REFERENCE_SOURCE", "GROWTH_DEVIATION_TAU", "GROWTH_RAW_TAU",
           "growth_reference"]
