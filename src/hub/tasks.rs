//! The tasks of every connected server (see [`Client::list_tasks`](crate::Client::list_tasks)).

use crate::error::Error;
use crate::model::Task;

use super::Hub;

impl Hub {
    /// Every task of every connected server that lists tasks (`tasks.list`), with its server's
    /// name, in configuration order. Servers that do not list tasks are left out.
    ///
    /// # Errors
    /// The first error of a server that lists tasks (as
    /// [`Client::list_tasks`](crate::Client::list_tasks)).
    pub fn list_tasks(&self) -> Result<Vec<(String, Task)>, Error> {
        let mut all = Vec::new();
        for server in self.connected_servers() {
            let Some(client) = self.client(&server) else {
                continue;
            };
            let lists = client
                .capabilities()
                .and_then(|c| c.tasks())
                .is_some_and(|t| t.has_list());
            if lists {
                all.extend(
                    client
                        .list_tasks()?
                        .into_iter()
                        .map(|t| (server.clone(), t)),
                );
            }
        }
        Ok(all)
    }
}
