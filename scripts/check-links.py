#!/usr/bin/env python3
"""Checks every internal link of a built mdBook: each relative href or src
of each HTML page names a file of the book, and each #fragment an id (or
name) on the page it points to. External links (a scheme, or //) are not
followed. Exits 1 naming each broken link by page."""
import os
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []
        self.ids = set()
        self.base = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "base":
            self.base = attrs.get("href")
            return
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            if attrs.get(key) is not None:
                self.links.append(attrs[key])


def parse(path, cache={}):
    if path not in cache:
        page = Page()
        with open(path, encoding="utf-8") as f:
            page.feed(f.read())
        cache[path] = page
    return cache[path]


def main(book):
    book = os.path.abspath(book)
    pages = [
        os.path.join(d, f)
        for d, _, files in os.walk(book)
        for f in files
        if f.endswith(".html")
    ]
    if not pages:
        sys.exit(f"check-links: no HTML pages under {book}")
    broken = []
    for page in sorted(pages):
        for link in parse(page).links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            target = page
            if parts.path:
                # `/x` and a page's <base href="/"> (404.html) are the book's root.
                base = os.path.dirname(page)
                if parse(page).base and parse(page).base.startswith("/"):
                    base = os.path.join(book, parse(page).base.lstrip("/"))
                path = unquote(parts.path)
                if path.startswith("/"):
                    base, path = book, path.lstrip("/")
                target = os.path.normpath(os.path.join(base, path))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not target.startswith(book + os.sep) or not os.path.isfile(target):
                    broken.append((page, link, "no such file in the book"))
                    continue
            if parts.fragment and target.endswith(".html"):
                if unquote(parts.fragment) not in parse(target).ids:
                    broken.append((page, link, "no such anchor"))
    for page, link, why in broken:
        print(f"{os.path.relpath(page, book)}: {link}: {why}")
    print(f"check-links: {len(pages)} pages, {len(broken)} broken internal links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "target/book"))
