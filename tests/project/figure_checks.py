"""Checks applied to every figure a notebook draws (injected by tests/project/test_notebooks.py).

A figure passes when every axes that holds data names both of its quantities (an axes
sharing its x or y axis with a labelled one inherits that label; a colour bar is exempt) and
no two legend entries of one axes share a colour and line style, or a label.
"""

import matplotlib.colors as mcolors
import matplotlib.figure as mfigure
import matplotlib.pyplot as plt


def figure_problems(fig) -> list[str]:
    problems = []
    axes = [ax for ax in fig.axes if ax.has_data() and ax.get_label() != "<colorbar>"]
    for i, ax in enumerate(axes):
        name = ax.get_title() or ax.get_title(loc="left") or f"axes {i}"
        for axis, getter, siblings in (("x", ax.get_xlabel, ax.get_shared_x_axes().get_siblings(ax)),
                                       ("y", ax.get_ylabel, ax.get_shared_y_axes().get_siblings(ax))):
            if not getter().strip():
                labelled = [s for s in siblings if s is not ax and (s.get_xlabel() if axis == "x" else s.get_ylabel()).strip()]
                if not labelled and not (axis == "x" and fig.supxlabel_text_present()) \
                        and not (axis == "y" and fig.supylabel_text_present()):
                    problems.append(f"{name!r}: no {axis} label")
        handles, labels = ax.get_legend_handles_labels()
        seen_style, seen_label = {}, set()
        for h, lab in zip(handles, labels):
            if not hasattr(h, "get_alpha") and hasattr(h, "__getitem__") and len(h):
                h = h[0]  # a container (bars, error bars): judge it by its first artist
            if lab in seen_label:
                problems.append(f"{name!r}: legend label {lab!r} used twice")
            seen_label.add(lab)
            colour = None
            for getter in ("get_color", "get_facecolor", "get_edgecolor"):
                if hasattr(h, getter):
                    try:
                        c = getattr(h, getter)()
                        if hasattr(c, "__len__") and len(c) and not isinstance(c, str) and hasattr(c[0], "__len__"):
                            c = c[0]
                        colour = mcolors.to_rgba(c)
                        break
                    except (ValueError, TypeError):
                        continue
            style = (colour, repr(getattr(h, "get_linestyle", lambda: None)()),
                     repr(getattr(h, "get_marker", lambda: None)()),
                     repr(getattr(h, "get_linewidth", lambda: None)()), repr(getattr(h, "get_alpha", lambda: None)()))
            if colour is not None and style in seen_style:
                problems.append(f"{name!r}: legend entries {seen_style[style]!r} and {lab!r} share colour and style")
            seen_style.setdefault(style, lab)
    return problems


def _sup_present(fig, attr) -> bool:
    t = getattr(fig, attr, None)
    return bool(t is not None and t.get_text().strip())


mfigure.Figure.supxlabel_text_present = lambda self: _sup_present(self, "_supxlabel")
mfigure.Figure.supylabel_text_present = lambda self: _sup_present(self, "_supylabel")


def install() -> None:
    """Wrap ``Figure.savefig`` and ``plt.show`` so a figure with a problem raises."""
    original_savefig = mfigure.Figure.savefig
    original_show = plt.show

    def check(fig):
        problems = figure_problems(fig)
        if problems:
            raise AssertionError("figure check failed: " + "; ".join(problems))

    def savefig(self, *args, **kwargs):
        check(self)
        return original_savefig(self, *args, **kwargs)

    def show(*args, **kwargs):
        for num in plt.get_fignums():
            check(plt.figure(num))
        return original_show(*args, **kwargs)

    mfigure.Figure.savefig = savefig
    plt.show = show
