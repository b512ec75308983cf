//! The page model (sections of charts, tables, facts) and its rendering
//! through the template `page.html.j2` (layout and CSS, auto-escaped).

use super::charts::{Plot, Rgb};
use serde::Serialize;

/// The whole page.
#[derive(Debug, Serialize)]
pub struct Page {
    pub title: String,
    pub subtitle: String,
    pub generated_by: String,
    pub sections: Vec<Section>,
}

/// A titled part of the page (an entry of the table of contents).
#[derive(Debug, Serialize)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Section {
    pub fn new(id: &str, title: impl Into<String>) -> Self {
        Self {
            id: id.to_owned(),
            title: title.into(),
            blocks: Vec::new(),
        }
    }

    pub fn push(&mut self, block: Block) {
        self.blocks.push(block);
    }

    /// Adds a grid of figures (the charts that drew something).
    pub fn figures(&mut self, figures: Vec<Option<Figure>>) {
        let items: Vec<Figure> = figures.into_iter().flatten().collect();
        if !items.is_empty() {
            self.blocks.push(Block::Figures { items });
        }
    }

    pub fn note(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Note { text: text.into() });
    }
}

/// A part of a section.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Block {
    /// Headline numbers as tiles.
    Tiles {
        items: Vec<Tile>,
    },
    /// Name: value pairs.
    Facts {
        items: Vec<(String, Cell)>,
    },
    /// Charts in a grid.
    Figures {
        items: Vec<Figure>,
    },
    Table(Table),
    /// A colour key shared by several charts.
    Legend {
        title: String,
        items: Vec<Swatch>,
    },
    Note {
        text: String,
    },
    /// Verbatim text, folded under its title.
    Code {
        title: String,
        text: String,
    },
}

/// One headline tile.
#[derive(Debug, Serialize)]
pub struct Tile {
    pub label: String,
    pub value: String,
    /// `good`, `bad` or empty.
    pub tone: &'static str,
}

impl Tile {
    pub fn new(label: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            value: value.into(),
            tone: "",
        }
    }

    pub fn tone(mut self, good: bool) -> Self {
        self.tone = if good { "good" } else { "bad" };
        self
    }
}

/// A table cell.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub text: String,
    /// CSS classes: `num`, `good`, `bad`, `mono`.
    pub class: String,
    /// Hover text (e.g. a full digest).
    pub title: String,
}

impl Cell {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            class: String::new(),
            title: String::new(),
        }
    }

    pub fn num(text: impl Into<String>) -> Self {
        Self::text(text).class("num")
    }

    pub fn class(mut self, class: &str) -> Self {
        if !self.class.is_empty() {
            self.class.push(' ');
        }
        self.class.push_str(class);
        self
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// PASS / FAIL / VALID ... coloured.
    pub fn verdict(text: &str, good: bool) -> Self {
        Self::text(text).class(if good { "good" } else { "bad" })
    }
}

/// A table.
#[derive(Debug, Serialize)]
pub struct Table {
    pub caption: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    /// Rows left out (said under the table).
    pub more: usize,
    /// Folded away under its caption (long reference lists).
    pub folded: bool,
}

impl Table {
    pub fn new(caption: impl Into<String>, head: &[&str]) -> Self {
        Self {
            caption: caption.into(),
            head: head.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
            more: 0,
            folded: false,
        }
    }
}

/// A drawn chart with its title and caption.
#[derive(Debug, Serialize)]
pub struct Figure {
    pub id: String,
    pub title: String,
    pub caption: String,
    pub svg: String,
    /// Data marks drawn (the browser check wants more than 0).
    pub marks: usize,
    /// Spans the whole row.
    pub wide: bool,
    /// The chart's legend, drawn under it.
    pub legend: Vec<Key>,
}

/// A legend entry of a figure.
#[derive(Debug, Serialize)]
pub struct Key {
    pub name: String,
    /// `#rrggbb`.
    pub color: String,
    pub glyph: super::charts::Glyph,
}

/// Draws `plot` as a figure; none when it has nothing to show.
pub fn figure(id: &str, title: &str, caption: &str, plot: &Plot) -> Option<Figure> {
    let svg = plot.draw()?;
    Some(Figure {
        id: id.to_owned(),
        title: title.to_owned(),
        caption: caption.to_owned(),
        svg: svg.svg,
        marks: svg.marks,
        wide: plot.width > 900,
        legend: svg
            .legend
            .into_iter()
            .map(|l| Key {
                name: l.name,
                color: hex(l.color),
                glyph: l.glyph,
            })
            .collect(),
    })
}

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// A legend entry.
#[derive(Debug, Serialize)]
pub struct Swatch {
    pub name: String,
    /// `#rrggbb`.
    pub color: String,
}

impl Swatch {
    pub fn new(name: impl Into<String>, c: Rgb) -> Self {
        Self {
            name: name.into(),
            color: hex(c),
        }
    }
}

const TEMPLATE: &str = include_str!("page.html.j2");

/// The page as one self-contained HTML document. Text from the run's files
/// (a server's error, a dataset's name) is HTML-escaped by the template, and
/// its control characters are shown as escapes (`\u{1b}`): the page carries
/// none but line ends and tabs.
pub fn render(page: &Page) -> Result<String, minijinja::Error> {
    let mut env = minijinja::Environment::new();
    env.add_template("page.html.j2", TEMPLATE)?;
    let html = env
        .get_template("page.html.j2")?
        .render(minijinja::Value::from(minijinja::value::Serde(page)))?;
    Ok(match agentload_console::printable(&html) {
        std::borrow::Cow::Borrowed(_) => html,
        std::borrow::Cow::Owned(escaped) => escaped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_and_escapes() {
        let mut s = Section::new("run", "Run <1>");
        s.push(Block::Facts {
            items: vec![("endpoint".into(), Cell::text("http://x/?a=<b>"))],
        });
        s.note("a & b");
        s.note("server said \u{1b}[2J\u{7}\0\r");
        let html = render(&Page {
            title: "t".into(),
            subtitle: "sub".into(),
            generated_by: "agentload".into(),
            sections: vec![s],
        })
        .unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("Run &lt;1&gt;"));
        assert!(html.contains("?a=&lt;b&gt;"));
        assert!(html.contains("a &amp; b"));
        assert!(html.contains("server said \\u{1b}[2J\\u{7}\\u{0}\\r"));
        assert!(
            !html
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "no raw control character on the page"
        );
        assert!(!html.contains("<script"), "the page needs no script");
        assert!(
            !html.contains(" src=") && !html.contains("<link"),
            "nothing fetched"
        );
    }
}
