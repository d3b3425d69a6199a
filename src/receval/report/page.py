"""What every HTML page receval writes shares: one jinja2 environment (autoescape on, so every
id, name, path and option from the data is escaped by one path), one Content-Security-Policy,
and the number formats of :mod:`receval.numbers` as the template filter ``number``.

The report (:mod:`receval.report.html`) and the monitor page (:mod:`receval.monitor.html`)
render through :func:`environment`; their templates write ``{{ csp }}`` in their
``<meta http-equiv="Content-Security-Policy">``. The notebook view, built without a template,
escapes with :func:`escape`, the function autoescape calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from receval import numbers

if TYPE_CHECKING:
    import jinja2

#: the pages' policy: nothing loads or runs (no script, no network), but the inline style and
#: the figures, which are SVG ``data:`` URIs inside ``<img>`` (an image never runs script)
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def environment(templates: str | Path) -> jinja2.Environment:
    """The jinja2 environment of the templates in the folder ``templates``: autoescape on,
    an undefined name an error, :data:`CSP` as ``csp``, and the filter ``number``
    (:func:`receval.numbers.number`: ``{{ x | number }}``, ``{{ n | number("count") }}``; a
    filter of its own name, so no jinja2 built-in such as ``count`` is shadowed).

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "t.j2").write_text(
        ...     "{{ csp }} {{ name }} {{ x | number }} {{ n | number('count') }}")
        >>> page = environment(folder).get_template("t.j2")
        >>> print(page.render(name="<b>", x=float("nan"), n=1234))
        default-src 'none'; img-src data:; style-src 'unsafe-inline' &lt;b&gt; n/a 1,234
    """
    import jinja2
    import markupsafe

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(templates)), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals["csp"] = markupsafe.Markup(CSP)  # a constant: written as is, quotes included
    env.filters["number"] = numbers.number
    return env


def escape(text: Any) -> str:
    """``text`` escaped for HTML as the templates' autoescape does it (markupsafe).

    Example:
        >>> escape("<b>'x' & \\"y\\"</b>")
        '&lt;b&gt;&#39;x&#39; &amp; &#34;y&#34;&lt;/b&gt;'
    """
    import markupsafe

    return str(markupsafe.escape(str(text)))
