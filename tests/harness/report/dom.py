"""A small DOM of an HTML report, built with the standard library's parser, so a test can ask what
a reader's browser would structure (which element holds which) without a browser."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"meta", "br", "img", "input", "link", "hr", "wbr", "source", "col", "area", "base", "embed"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)
    parent: Element | None = None

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, cls: str | None = None, tag: str | None = None, **attrs: str) -> list[Element]:
        return [
            e
            for e in self.iter()
            if (cls is None or cls in e.classes)
            and (tag is None or e.tag == tag)
            and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def find(self, cls: str | None = None, tag: str | None = None, **attrs: str) -> Element:
        found = self.find_all(cls, tag, **attrs)
        assert found, f"no element with class={cls!r} tag={tag!r} {attrs} in <{self.tag} {self.attrs}>"
        return found[0]

    def ancestors(self) -> Iterator[Element]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs}, parent=self.stack[-1])
        self.stack[-1].children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return
        raise AssertionError(f"</{tag}> closes nothing open")

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root
