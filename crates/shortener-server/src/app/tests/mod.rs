//! Nodes built in-process from a configuration and called through their routes, with no
//! socket: the whole HTTP adapter as the composition root assembles it.

mod bulk;
mod fuzz;
mod redirects;
