//! Statistics as the reference reports them: exact order statistics with the
//! "lower" percentile method on the reference's grid, MLPerf early-stopping
//! estimates, and the `result_summary.json` series objects.

mod early_stopping;
pub mod interactivity;
mod series;
mod spread;

pub use early_stopping::early_stopping_index;
pub use interactivity::{Definition, Interactivity, TurnTimes};
pub use series::{lower_percentile, Series, PERCENTILE_GRID};
pub use spread::Spread;
